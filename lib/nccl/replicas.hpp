// The other devices of a rank that drives several GPUs (TF's
// num_gpus_per_worker > 1; replica 0 lives on the engine's device): a
// stream, an event and pack buffers per replica slot; the moves between
// replicas (combine into replica 0, spread back); and, for the flat `nccl`
// all-reduce, one NCCL communicator over every replica of every rank (NCCL
// rank = rank x replicas + replica), driven by group calls. Owned by the
// Engine, which aborts it with its own communicators.
#pragma once

#include <nccl.h>

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "cuda/stream.hpp"
#include "gpu/batch_pack.hpp"
#include "strata/types.hpp"
#include "util/deadline.hpp"

namespace strata::nccl {

class Engine;

class ReplicaSet {
 public:
  // What replica slot r >= 1 keeps on its device.
  struct Slot {
    int device = -1;
    std::unique_ptr<cuda::Stream> stream;
    std::unique_ptr<cuda::Event> ready;
    cuda::DeviceBuffer packed, descs;
  };

  ReplicaSet() = default;
  ~ReplicaSet();  // finalizes the NCCL communicators (bounded), or nothing after abort
  ReplicaSet(const ReplicaSet&) = delete;
  ReplicaSet& operator=(const ReplicaSet&) = delete;

  // Slot r (>= 1) on CUDA device `device`, created on first use and again
  // when the device changes.
  Slot& slot(std::size_t r, int device);

  // The NCCL communicators over every replica of every rank, one per local
  // device: `all[r]` lists rank r's replica devices (every rank passes the
  // same table, gathered in the same call, and the control plane found no
  // two replicas on one GPU). Created on first use and again when the table
  // changes — a decision every rank makes alike. Collective over the
  // engine's MPI communicator, bounded by topo::setup_seconds(); failures
  // raise the same error on every rank (nccl::create_comms).
  std::span<const ncclComm_t> world(Engine& engine, const std::vector<std::vector<int>>& all);

  // The stream of replica r: the engine's for r = 0, the slot's otherwise.
  cudaStream_t stream(Engine& engine, std::size_t r);

  // Replicas 1.. of `packed` reduced into replica 0's buffer on the
  // engine's device, in replica order (each waits for its pack kernel,
  // crosses with a peer copy and is reduced with strata's kernel). op !=
  // mean.
  void combine(Engine& engine, const gpu::Packed& packed, ReduceOp op);
  // Replica 0's buffer to the other replicas' buffers, each on its stream
  // after the engine's work.
  void spread(Engine& engine, const gpu::Packed& packed);
  // One all-reduce over every replica of every rank: replica r's buffer on
  // its device, one NCCL rank each, in one group on each replica's stream.
  // `all` as for world(). op is one NCCL reduces as strata does.
  void all_reduce(Engine& engine, const std::vector<std::vector<int>>& all, const gpu::Packed& packed, ReduceOp op);

  bool idle() const;               // every slot's stream finished its work
  std::string async_error() const;  // "" or the first NCCL async error text
  void abort();                    // never throws
  void abandon();                  // leak the buffers (aborted work may still use them)

 private:
  void destroy_world();

  std::vector<std::unique_ptr<Slot>> slots_;  // index r - 1
  std::vector<std::vector<int>> world_devices_;  // the table the communicators were made for
  std::vector<ncclComm_t> world_;
  bool aborted_ = false;
};

}  // namespace strata::nccl
