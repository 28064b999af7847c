// The per-communicator GPU state the backend's primitives run on: the
// device, one non-blocking stream, the call in progress (its deadline, and
// the order after the caller's producer stream), the NCCL communicator of
// each group (whole communicator, node, cross-node; nccl/comm.hpp), the
// other replicas' devices (nccl/replicas.hpp), grow-only device and pinned
// buffers, events, a host workspace, and the polling waits that honour a
// call's deadline.
//
// No NCCL call parks the thread, so a wait polls cudaStreamQuery and
// ncclCommGetAsyncError against the deadline. On expiry every
// communicator is aborted (ncclCommAbort), the engine is marked broken,
// and DeadlineExceeded is raised; later calls throw PeerFailure.
#pragma once

#include <mpi.h>
#include <nccl.h>

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "cuda/stream.hpp"
#include "nccl/comm.hpp"
#include "plan/job.hpp"
#include "plan/level.hpp"
#include "topo/gpu_plane.hpp"
#include "topo/node_split.hpp"
#include "util/breaking.hpp"
#include "util/deadline.hpp"
#include "util/workspace.hpp"

namespace strata::nccl {

class ReplicaSet;

class Engine {
 public:
  // `rows`: the GPU control plane's table (for the replica decisions).
  // Makes a stream on `device`, leaving the caller's current device as it was.
  Engine(MPI_Comm comm, const topo::NodeSplit& split, int device, std::vector<topo::GpuRow> rows);
  // shut_down(), then frees everything. Never throws.
  ~Engine();
  // Within one bound of kTeardownSeconds: waits for outstanding work (else
  // leaks the buffers it may still use), then finalizes every NCCL
  // communicator at once (nccl::close_all). True when the work finished, so
  // memory it used may be freed; false when it was abandoned, and so must
  // any buffer an owner outside the engine gave that work (the packer's).
  // Later calls return the first answer. Never throws.
  bool shut_down() noexcept;
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  MPI_Comm comm() const { return comm_; }
  std::span<const topo::GpuRow> rows() const { return rows_; }
  int device() const { return device_; }
  cudaStream_t stream() const { return stream_->get(); }
  util::Workspace& workspace() { return workspace_; }

  // The call in progress (Backend::open .. close). `devices` are the
  // replicas' devices ([0] = this engine's). Makes the device current and
  // orders every replica stream after `producer` (null: each device's
  // legacy default stream).
  void open(const util::Deadline& deadline, const plan::CallInfo& info, void* producer, std::span<const int> devices);
  void close() noexcept;
  const util::Deadline& deadline() const { return *deadline_; }
  const plan::CallInfo& info() const { return info_; }

  // The MPI communicator of a group, and its NCCL communicator, created on
  // first use (collective over the group, bounded by topo::setup_seconds()).
  MPI_Comm mpi(plan::Group group) const;
  Comm& nccl(plan::Group group);

  // Check the return code of an enqueueing NCCL call on `comm`:
  // ncclInProgress is polled to completion against the call's deadline.
  void enqueued(ncclComm_t comm, ncclResult_t rc, const char* call);
  void enqueued(Comm& comm, ncclResult_t rc, const char* call) { enqueued(comm.get(), rc, call); }

  // Block (politely) until all work on the stream (and the replica
  // devices' streams) finished, or `event` when given. An NCCL
  // communicator's asynchronous error is raised also when the work itself
  // ended (an operation that failed may leave its stream idle). Throws
  // DeadlineExceeded (after aborting NCCL) or BackendError.
  void wait(cuda::Event* event = nullptr);

  // The other devices of a rank with several replicas (see replicas.hpp).
  ReplicaSet& replicas() { return *replicas_; }

  // Scratch: device slots 0-3 (0 and 1 for the levels, 2 for packs, 3 for
  // NaN-safe reductions), grow-only. Memory a buffer outgrew is freed only
  // once wait() saw every stream idle (retired()).
  void* device_scratch(int slot, std::size_t bytes) { return device_buffers_[slot].get(bytes, retired_); }
  // Staging: `count` pinned buffers of `bytes` each (a ring reused by
  // chunked copies), allocated once per size; never the whole tensor.
  void* staging(std::size_t index, std::size_t bytes);
  // Pinned scratch of `bytes` for slot 0 or 1 (psgpu, which stages whole slices).
  void* pinned(int slot, std::size_t bytes) { return pinned_[slot].get(bytes, retired_); }
  cuda::Event& event(std::size_t index);
  // Where every grow-only buffer of this engine (its own, the packer's, the
  // replica slots') puts the memory it outgrew.
  cuda::Retired& retired() { return retired_; }

  // Runs `work`; a timeout or a CUDA/NCCL failure marks the engine broken,
  // aborting its communicators and letting queued work drain (at most
  // kDrainSeconds), before the exception goes on.
  template <typename Work>
  void breaking_on_failure(Work&& work) {
    util::breaking_on_failure(work, [this](const char* what) { mark_broken(what); });
  }

  // Broken state (see the header comment).
  const std::string& broken_reason() const { return broken_; }
  void ensure_usable() const;
  void mark_broken(const std::string& reason) noexcept;

 private:
  // Marks the engine broken with `reason` (the first one stays) and aborts
  // its communicators; their queued operations end.
  void abort_all(const std::string& reason) noexcept;
  // Waits until the engine's and the replicas' streams are idle: false when
  // `bound` expired first or a stream reported an error.
  bool drained(const util::Deadline& bound) noexcept;
  [[noreturn]] void expire();
  void check_async();

  MPI_Comm comm_;
  const topo::NodeSplit& split_;
  int device_;
  std::vector<topo::GpuRow> rows_;
  int previous_device_ = -1;  // the caller's, restored by close()
  const util::Deadline* deadline_ = nullptr;
  plan::CallInfo info_;
  std::unique_ptr<cuda::Stream> stream_;
  std::unique_ptr<Comm> comms_[3];  // by plan::Group
  std::unique_ptr<ReplicaSet> replicas_;
  cuda::Retired retired_;  // declared before the buffers: destroyed after them
  cuda::DeviceBuffer device_buffers_[4];
  cuda::PinnedBuffer pinned_[2];
  std::vector<std::unique_ptr<cuda::PinnedBuffer>> staging_;
  std::vector<std::unique_ptr<cuda::Event>> events_;
  std::vector<std::unique_ptr<cuda::Event>> producer_events_;  // by device
  util::Workspace workspace_;
  std::string broken_;
  std::optional<bool> shut_down_;  // shut_down()'s answer, once it ran
};

}  // namespace strata::nccl
