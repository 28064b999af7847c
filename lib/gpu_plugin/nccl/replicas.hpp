// The replicas of a batch pack that do not live in the engine's own
// buffers (TF's num_gpus_per_worker > 1: replicas 1.., and replica 0 too
// when it lies on another device than the engine's, as a TensorFlow-style
// list starting at device 0 may): a stream, an event and pack buffers per
// replica slot on its device; the moves between replicas and the pack's
// home on the engine's device (combine, spread); and, for NCCL plans, one
// NCCL communicator over every replica of every rank (NCCL rank = rank x
// replicas + replica), driven by group calls. Owned by the Engine, which
// aborts it with its own communicators. Where the GPUs allow it, peer
// access between a slot's device and the engine's is enabled, so the moves
// go device to device, not through the host.
#pragma once

#include <nccl.h>

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "gpu_plugin/cuda/stream.hpp"
#include "gpu/batch_pack.hpp"
#include "strata/types.hpp"
#include "util/deadline.hpp"

namespace strata::nccl {

class Engine;

class ReplicaSet {
 public:
  // What replica slot r keeps on its device.
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

  // Arranges the open call's replicas: every replica gets a slot on its
  // device except replica 0 when it lies on the engine's device (it then
  // uses the engine's stream and buffers). Slots are created on first use
  // and again when a device changes.
  void arrange(Engine& engine, std::span<const int> devices);
  // Slot r of the arranged call.
  Slot& slot(std::size_t r);

  // The NCCL communicators over every replica of every rank, one per local
  // device: `all[r]` lists rank r's replica devices (every rank passes the
  // same table, gathered in the same call, and the control plane found no
  // two replicas on one GPU). Created on first use and again when the table
  // changes — a decision every rank makes alike. Collective over the
  // engine's MPI communicator, bounded by topo::setup_seconds(); failures
  // raise the same error on every rank (nccl::create_comms).
  std::span<const ncclComm_t> world(Engine& engine, const std::vector<std::vector<int>>& all);

  // Whether replica r has a slot (else it is replica 0 on the engine's device).
  bool has_slot(std::size_t r) const { return r > 0 || !home_is_replica0_; }
  // The stream of replica r: its slot's, or the engine's.
  cudaStream_t stream(Engine& engine, std::size_t r);

  // Replicas 0 .. replicas - 1 of `packed` into its home on the engine's
  // device, in replica order: each that is not the home waits for its pack
  // kernel, crosses with a peer copy and is reduced with strata's kernel (a
  // home of its own takes replica 0's copy as it is). op != mean.
  void combine(Engine& engine, const gpu::Packed& packed, ReduceOp op, std::size_t replicas);
  // The home to every replica's buffer that is not the home, each on its
  // stream after the engine's work.
  void spread(Engine& engine, const gpu::Packed& packed);
  // One all-reduce over every replica of every rank: replica r's buffer on
  // its device, one NCCL rank each, in one group on each replica's stream.
  // `all` as for world(). op is one NCCL reduces as strata does.
  void all_reduce(Engine& engine, const std::vector<std::vector<int>>& all, const gpu::Packed& packed, ReduceOp op);

  // Makes the engine's stream wait for every slot stream's work so far (an
  // ordered call's end: one fence on the engine's stream then covers all).
  void join(Engine& engine);

  bool idle() const;               // every slot's stream finished its work
  std::string async_error() const;  // "" or the first NCCL async error text
  void abort();                    // never throws
  void abandon();                  // leak the buffers (aborted work may still use them)
  // Hands the replica communicators to the caller (to close with others at
  // once; none after abort).
  std::vector<ncclComm_t> release_world();

 private:
  void destroy_world();

  std::vector<std::unique_ptr<Slot>> slots_;  // by replica; slot 0 only while replica 0 lies elsewhere
  bool home_is_replica0_ = true;
  std::vector<std::vector<int>> world_devices_;  // the table the communicators were made for
  std::vector<ncclComm_t> world_;
  bool aborted_ = false;
};

}  // namespace strata::nccl
