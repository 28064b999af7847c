// How a pack of a CUDA batch treats its replicas (several GPUs per rank,
// TF's num_gpus_per_worker > 1). plan::choose picks the algorithm and shape
// of the pack; this is the one place that decides, from that choice and the
// call, whether the replicas become NCCL ranks of their own. The execute
// stage (exec::run_gpu_pack) carries the answer out.
#pragma once

#include <cstddef>
#include <functional>

#include "plan/choose.hpp"
#include "strata/types.hpp"

namespace strata::plan {

enum class ReplicaPath {
  // Replicas 1.. are reduced into replica 0 on the rank's device (replica
  // order), the plan runs across ranks on that one buffer, and the result
  // is copied back to the other replicas. Also the path of one replica.
  combined,
  // Every replica of every rank is an NCCL rank: one all-reduce over all
  // of them (flat, whatever the plan's shape), no plan across ranks.
  replica_ranks,
};

// What the decision depends on besides the control plane's verdict.
struct ReplicaFacts {
  std::size_t replicas = 1;  // local replicas (the same on every rank)
  Collective collective = Collective::all_reduce;
  const Choice* choice = nullptr;  // the pack's plan (plan::choose)
  ReduceOp op = ReduceOp::sum;     // the level op: mean runs as sum
  DataType dtype = DataType::f32;
};

// replica_ranks for an all-reduce of several replicas whose plan's levels
// all offer it (Algorithm::replica_ranks: flat `nccl`, and `nccl/nccl` on
// several nodes), on an op NCCL reduces as strata does (plan/nan.hpp),
// where the GPU control plane finds every replica of every rank on its own
// GPU; combined otherwise. `usable` gives that last
// verdict; it is collective (every rank's replica devices are gathered), so
// it is asked only when everything else allows replica ranks, which every
// rank decides alike. Throws what `usable` throws.
ReplicaPath replica_path(const ReplicaFacts& facts, const std::function<bool()>& usable);

}  // namespace strata::plan
