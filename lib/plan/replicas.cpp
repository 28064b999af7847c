#include "plan/replicas.hpp"

#include "plan/nan.hpp"

namespace strata::plan {

ReplicaPath replica_path(const ReplicaFacts& facts, const std::function<bool()>& usable) {
  // Every level of the plan must offer it: flat `nccl`, or `nccl/nccl` on
  // several nodes (NCCL's own rings and trees over every replica of every
  // rank are topology-aware across nodes; combining replicas first would
  // move each through a peer copy and leave all but one GPU idle).
  const Choice& c = *facts.choice;
  const bool every_level = c.algorithm->replica_ranks && (c.shape == Shape::flat || (c.cross && c.cross->replica_ranks));
  const bool offered = facts.replicas > 1 && facts.collective == Collective::all_reduce && every_level &&
                       nccl_reduces(facts.op, facts.dtype);
  return offered && usable() ? ReplicaPath::replica_ranks : ReplicaPath::combined;
}

}  // namespace strata::plan
