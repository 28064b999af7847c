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
//
// A call runs on the engine's own stream, ordered after its producer and,
// for an ordered call, with the producer ordered after it in turn; a
// captured call runs on the producer stream itself (which records it into
// a CUDA graph) with memory of its own, kept while the engine lives, since
// the graph may replay at any time. One thread at a time drives calls
// (open .. close); the fences, gates, asynchronous errors, reclaiming and
// mark_broken may come from another thread at the same time: they lock
// `shared_`, and an abort from another thread waits until the call in
// progress is closed (a communicator must not vanish under a call using it).
#pragma once

#include <mpi.h>
#include <nccl.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "gpu_plugin/cuda/stream.hpp"
#include "gpu/backend.hpp"
#include "gpu_plugin/nccl/comm.hpp"
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
  // The stream the open call's work goes on: the engine's own, or the
  // capturing producer stream of a captured call.
  cudaStream_t stream() const { return call_stream_ ? call_stream_ : stream_->get(); }
  // Whether the open call is being captured into a CUDA graph.
  bool capturing() const { return mode_ == gpu::Mode::captured; }
  util::Workspace& workspace() { return workspace_; }

  // The call in progress (Backend::open .. close). `devices` are the
  // replicas' devices ([0] = this engine's). Makes the device current and
  // orders every replica stream after the producer (call.producer; null:
  // each device's legacy default stream) as it was at call.ready, or as it
  // is now. A captured call runs on the producer stream itself and may have
  // no replica on another device (InvalidArgument).
  void open(const gpu::CallContext& call, std::span<const int> devices);
  // Ordered mode's end (Backend::enqueued).
  gpu::Fence enqueued_fence();
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
  // once every stream was seen idle (retired()). A captured call gets
  // memory of its own instead (captured()).
  void* device_scratch(int slot, std::size_t bytes) {
    return capturing() ? captured(bytes, false) : device_buffers_[slot].get(bytes, retired_);
  }
  // `bytes` of device (or pinned host) memory for the captured call in
  // progress, allocated now and kept until the engine ends: the graph reads
  // and writes it at every replay.
  void* captured(std::size_t bytes, bool pinned);
  // Staging: `count` pinned buffers of `bytes` each (a ring reused by
  // chunked copies), allocated once per size; never the whole tensor.
  void* staging(std::size_t index, std::size_t bytes);
  cuda::Event& event(std::size_t index);

  // --- Any thread (gpu::Backend's) ------------------------------------------
  gpu::Fence mark(void* stream, int device);
  bool passed(gpu::Fence fence);
  void release(gpu::Fence fence) noexcept;
  std::string async_error();
  gpu::Gate hold(void* stream);
  void open_gate(gpu::Gate gate) noexcept;
  void reclaim() noexcept;
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

  // Broken state (see the header comment). mark_broken: any thread.
  std::string broken_reason() const;
  void ensure_usable() const;
  void mark_broken(const std::string& reason) noexcept;

 private:
  // Marks the engine broken with `reason` (the first one stays), aborts its
  // communicators (their queued operations end) and opens every gate.
  void abort_all(const std::string& reason) noexcept;
  // The fence `fence` stands for (shared_ held).
  cuda::Event& fence_event(gpu::Fence fence);
  // A fence recorded on `stream` of `device` (`current`: that device is
  // the calling thread's current one).
  gpu::Fence record_fence(cudaStream_t stream, int device, bool current);
  // Makes `stream` (on `device`) wait for the work on `device`'s stream
  // `producer` as it is now, through that device's producer event.
  void order_after(cudaStream_t stream, cudaStream_t producer, int device);
  // Waits until the engine's and the replicas' streams are idle: false when
  // `bound` expired first or a stream reported an error.
  bool drained(const util::Deadline& bound) noexcept;
  [[noreturn]] void expire();
  // Carries out an abort another thread asked for while this call was open.
  [[noreturn]] void aborted_elsewhere();
  void check_async();

  MPI_Comm comm_;
  const topo::NodeSplit& split_;
  int device_;
  std::vector<topo::GpuRow> rows_;
  int previous_device_ = -1;  // the caller's, restored by close()
  const util::Deadline* deadline_ = nullptr;
  plan::CallInfo info_;
  gpu::Mode mode_ = gpu::Mode::blocking;  // the open call's
  void* producer_ = nullptr;              // the open call's producer stream (null: legacy default)
  cudaStream_t call_stream_ = nullptr;    // the open call's stream when it is not the engine's own
  std::unique_ptr<cuda::Stream> stream_;
  // Held from open() to close() by the thread driving the call; an abort
  // from another thread takes it first.
  std::mutex scope_;
  std::atomic<std::thread::id> scope_owner_{};
  // An abort another thread asked for while a call was open: the call's
  // waits and its close() carry it out.
  std::atomic<bool> abort_requested_{false};
  std::string requested_reason_;  // (shared_)
  // Guards what other threads reach: the fences, the gates, the broken
  // reason, the communicators' pointers (created, queried, aborted), the
  // captured memory and the retired list's release.
  mutable std::mutex shared_;
  std::unique_ptr<Comm> comms_[3];  // by plan::Group
  std::unique_ptr<ReplicaSet> replicas_;
  cuda::Retired retired_;  // declared before the buffers: destroyed after them
  cuda::DeviceBuffer device_buffers_[4];
  std::vector<std::unique_ptr<cuda::PinnedBuffer>> staging_;
  std::vector<std::unique_ptr<cuda::Event>> events_;
  std::vector<std::unique_ptr<cuda::Event>> producer_events_;  // by device
  struct FenceSlot {
    int device = 0;
    std::unique_ptr<cuda::Event> event;
  };
  std::vector<FenceSlot> fences_;       // by Fence::index
  std::vector<std::uint32_t> free_fences_;
  unsigned int* gate_word_ = nullptr;   // mapped pinned: the number of the last gate opened
  std::uint32_t gates_made_ = 0;        // the number of the last gate made
  std::vector<void*> captured_device_, captured_pinned_;  // captured calls' memory
  util::Workspace workspace_;
  std::string broken_;
  std::optional<bool> shut_down_;  // shut_down()'s answer, once it ran
};

}  // namespace strata::nccl
