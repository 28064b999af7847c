// The per-communicator GPU state every GPU algorithm runs on: the device,
// one non-blocking stream, the lazily created NCCL communicators (whole job,
// node, cross-node per local index), grow-only device and pinned buffers,
// and the polling waits that honour a call's deadline.
//
// NCCL communicators are created non-blocking (ncclConfig_t.blocking = 0):
// no NCCL call parks the thread, so a wait can poll cudaStreamQuery and
// ncclCommGetAsyncError against the deadline. On expiry every communicator
// is aborted (ncclCommAbort), the engine is marked broken, and
// DeadlineExceeded is raised; later calls throw PeerFailure.
#pragma once

#include <mpi.h>
#include <nccl.h>

#include <memory>
#include <span>
#include <string>
#include <vector>

#include "util/breaking.hpp"
#include "util/deadline.hpp"
#include "util/workspace.hpp"
#include "cuda/stream.hpp"
#include "host/transport.hpp"
#include "topo/node_split.hpp"

namespace strata::nccl {

class Engine;
class ReplicaSet;

// Poll a non-blocking communicator until its pending operation (init,
// enqueue, group end) is no longer in progress; returns the final state.
// On expiry of `deadline` sets `expired` and returns ncclInProgress.
ncclResult_t settle(ncclComm_t comm, const util::Deadline& deadline, bool& expired);

// Finalize (bounded to 10 s) and destroy a communicator, or abort it when
// that fails or takes too long. Never throws; for teardown.
void close(ncclComm_t comm);

// Collective over `bounded`'s communicator: every member passes its CUDA
// devices (the same number on every member). Throws Unavailable on every
// member when two of the devices (on one member or two members of one host)
// are the same GPU, naming `name`: NCCL needs one GPU per NCCL rank.
// Bounded by the transport's deadline.
void ensure_distinct_gpus(host::Transport& bounded, std::span<const int> devices, const char* name,
                          const plan::CallInfo& info);

// One NCCL communicator over the ranks of an MPI communicator.
class Comm {
 public:
  // Collective over `mpi`. Throws Unavailable when two of its ranks drive
  // the same GPU (NCCL refuses that), BackendError when NCCL fails.
  Comm(Engine& engine, MPI_Comm mpi, const char* name, const util::Deadline& deadline, const plan::CallInfo& info);
  ~Comm();  // ncclCommFinalize + ncclCommDestroy (bounded), or nothing after abort
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;

  ncclComm_t get() const { return comm_; }
  int rank() const { return rank_; }
  int size() const { return size_; }
  const char* name() const { return name_; }
  void abort();  // never throws

 private:
  ncclComm_t comm_ = nullptr;
  int rank_ = 0;
  int size_ = 1;
  const char* name_;
  bool aborted_ = false;
};

class Engine {
 public:
  Engine(MPI_Comm comm, const topo::NodeSplit& split, int device);
  ~Engine();

  MPI_Comm comm() const { return comm_; }
  const topo::NodeSplit& split() const { return split_; }
  int device() const { return device_; }
  cudaStream_t stream() const { return stream_->get(); }
  util::Workspace& workspace() { return workspace_; }

  // The NCCL communicators, created on first use (collective over their
  // MPI communicator: every member reaches the same call in the same plan).
  Comm& world(const util::Deadline& deadline, const plan::CallInfo& info);
  Comm& node(const util::Deadline& deadline, const plan::CallInfo& info);
  Comm& cross(const util::Deadline& deadline, const plan::CallInfo& info);  // only where split().cross != NULL

  // Check the return code of an enqueueing NCCL call on `comm`:
  // ncclInProgress is polled to completion against the deadline.
  void enqueued(Comm& comm, ncclResult_t rc, const char* call, const util::Deadline& deadline,
                const plan::CallInfo& info) {
    enqueued(comm.get(), rc, call, deadline, info);
  }
  void enqueued(ncclComm_t comm, ncclResult_t rc, const char* call, const util::Deadline& deadline,
                const plan::CallInfo& info);

  // Block (politely) until all work on the stream (and the replica
  // devices' streams) finished, or `event` when given. Throws DeadlineExceeded (after aborting NCCL) or BackendError.
  void wait(const util::Deadline& deadline, const plan::CallInfo& info, cuda::Event* event = nullptr);

  // The other devices of a rank with several replicas (see replicas.hpp).
  ReplicaSet& replicas() { return *replicas_; }

  // Scratch: device slots 0-2 (0 and 1 for the algorithms, 2 for packs),
  // pinned host slots 0 and 1.
  void* device_scratch(int slot, std::size_t bytes) { return device_buffers_[slot].get(bytes); }
  void* pinned(int slot, std::size_t bytes) { return pinned_[slot].get(bytes); }
  cuda::Event& event(std::size_t index);

  // Runs `work` (GPU work of one call); a timeout or a CUDA/NCCL failure
  // marks the engine broken, aborting its communicators, before the
  // exception goes on.
  template <typename Work>
  void breaking_on_failure(Work&& work) {
    util::breaking_on_failure(work, [this](const char* what) { mark_broken(what); });
  }

  // Broken state (see the header comment).
  const std::string& broken_reason() const { return broken_; }
  void ensure_usable() const;
  void mark_broken(const std::string& reason);

 private:
  [[noreturn]] void expire(const util::Deadline& deadline, const plan::CallInfo& info);
  void check_async(const plan::CallInfo& info);

  MPI_Comm comm_;
  const topo::NodeSplit& split_;
  int device_;
  std::unique_ptr<cuda::Stream> stream_;
  std::unique_ptr<Comm> world_, node_, cross_;
  std::unique_ptr<ReplicaSet> replicas_;
  cuda::DeviceBuffer device_buffers_[3];
  cuda::PinnedBuffer pinned_[2];
  std::vector<std::unique_ptr<cuda::Event>> events_;
  util::Workspace workspace_;
  std::string broken_;
};

}  // namespace strata::nccl
