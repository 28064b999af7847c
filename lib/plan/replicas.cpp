#include "plan/replicas.hpp"

#include "plan/nan.hpp"

namespace strata::plan {

ReplicaPath replica_path(const ReplicaFacts& facts, const std::function<bool()>& usable) {
  const bool offered = facts.replicas > 1 && facts.collective == Collective::all_reduce &&
                       facts.choice->shape == Shape::flat && facts.choice->algorithm->replica_ranks &&
                       nccl_reduces(facts.op, facts.dtype);
  return offered && usable() ? ReplicaPath::replica_ranks : ReplicaPath::combined;
}

}  // namespace strata::plan
