// TensorFlow-named facades over a Communicator: NcclAllReduce,
// MultiWorkerAllReduce and ReductionToOneDevice, each with reduce,
// batch_reduce and broadcast. They are thin: each fixes an all_reduce_spec
// and packing options and calls the Communicator's batch path. Unlike
// TensorFlow, every entry point honours CommunicationOptions (timeout,
// bytes_per_pack, implementation).
#pragma once

#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "strata/communicator.hpp"
#include "strata/options.hpp"
#include "strata/spec.hpp"
#include "strata/types.hpp"

namespace strata {

// Where a reduction's result goes: every rank (an all-reduce) or one root
// rank (a reduce).
class Destination {
 public:
  static Destination all_ranks() { return Destination(true, -1); }
  // Throws InvalidArgument at use if `root` is outside the communicator.
  static Destination rank(int root) { return Destination(false, root); }
  bool is_all_ranks() const { return all_; }
  int root() const { return root_; }  // -1 for all ranks

 private:
  Destination(bool all, int root) : all_(all), root_(root) {}
  bool all_;
  int root_;
};

// One tensor per local replica (TensorFlow's PerReplica value): a rank that
// drives several devices holds one copy each. All replicas of one value have
// the same count and dtype, and every rank has the same number of replicas.
using PerReplica = std::vector<Tensor>;

class CrossDeviceOps {
 public:
  virtual ~CrossDeviceOps() = default;

  // Reduce `value` across all replicas of all ranks; the result is written
  // into every replica tensor on the destination rank(s). mean divides by
  // ranks x replicas. Throws InvalidArgument (replica count or shapes
  // differ, destination out of range, bad options) before sending anything.
  void reduce(ReduceOp op, const PerReplica& value, Destination destination, const CommunicationOptions& options = {});

  // Several reductions in one call: values with the same destination are
  // packed together. Results land in the caller's tensors in input order.
  void batch_reduce(ReduceOp op, std::span<const std::pair<PerReplica, Destination>> pairs,
                    const CommunicationOptions& options = {});

  // Copy replica 0 of `value` on `source_rank` into every replica on the
  // destination rank(s). The call is collective over all ranks; ranks that
  // are not destinations keep their tensors unchanged.
  void broadcast(const PerReplica& value, Destination destinations = Destination::all_ranks(), int source_rank = 0,
                 const CommunicationOptions& options = {});

  // The spec in its string form ("pscpu/pscpu#2").
  const std::string& all_reduce_spec() const { return spec_text_; }

 protected:
  // `replicas_per_rank` = 0 accepts any (consistent) replica count.
  CrossDeviceOps(Communicator& comm, const AllReduceSpec& spec, PackingOptions packing, int replicas_per_rank);

 private:
  struct ParsedSpec;
  Communicator& comm_;
  std::string spec_text_;
  std::shared_ptr<const ParsedSpec> spec_;
  PackingOptions packing_;
  int replicas_per_rank_;
};

// NCCL all-reduce of CUDA tensors, packed into `num_packs` packs per dtype
// (negative: InvalidArgument). Until the GPU backend lands, host tensors
// given to it run strata's default host algorithms instead.
class NcclAllReduce : public CrossDeviceOps {
 public:
  explicit NcclAllReduce(Communicator& comm, int num_packs = 1);
};

// Multi-worker all-reduce with an all_reduce_spec in its string form
// ("pscpu/pscpu#2", the default) or its tuple form
// ({{"nccl/xring", 2, 65536}, {"pscpu/pscpu", 2, -1}}); see
// docs/ALGORITHMS.md. `num_gpus_per_worker` replicas per rank (>= 1),
// packing per num_packs or small-gradient aggregation. Throws
// InvalidArgument for a bad spec or negative counts.
class MultiWorkerAllReduce : public CrossDeviceOps {
 public:
  MultiWorkerAllReduce(Communicator& comm, int num_gpus_per_worker,
                       const AllReduceSpec& all_reduce_spec = AllReduceSpec("pscpu/pscpu#2"),
                       int num_packs = 0, long long agg_small_grads_max_bytes = 0, int agg_small_grads_max_group = 10);
};

// Reduce everything to one rank, then broadcast (a binomial tree both ways):
// the simple, always-available fallback.
class ReductionToOneDevice : public CrossDeviceOps {
 public:
  explicit ReductionToOneDevice(Communicator& comm);
};

}  // namespace strata
