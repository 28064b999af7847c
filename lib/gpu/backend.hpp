// The seam between the execute stage (lib/exec) and the GPU backend. exec
// opens a call, asks the backend for the levels the plan runs
// (Backend::level for GPU algorithms from the registry, Backend::staged for
// host algorithms through pinned copies), drives them (flat, or the one
// hierarchical driver), finishes (Backend::divide for mean), then waits
// (Backend::complete) and closes the call. Batches add the pack primitives.
//
// This header needs no CUDA or NCCL headers, so every build compiles it.
// Host-only builds (-Dcuda=disabled, or no nvcc/NCCL found) link
// lib/gpu/backend_stub.cpp: built() is false, device_available() false with
// a reason, and make_backend() throws strata::Unavailable.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "gpu/algorithm.hpp"
#include "host/algorithm.hpp"
#include "plan/job.hpp"
#include "plan/level.hpp"
#include "strata/types.hpp"
#include "topo/discover.hpp"
#include "topo/gpu_plane.hpp"
#include "topo/node_split.hpp"
#include "util/deadline.hpp"

namespace strata::gpu {

// Compiled with CUDA and NCCL.
bool built();

// Whether a CUDA device is usable now (driver loaded, cudaGetDeviceCount > 0).
// Never throws; on false, `why` (if non-null) gets a one-line reason.
bool device_available(std::string* why = nullptr);

// What this process sees of CUDA: every device's PCI bus id and compute
// mode, or why it sees none. Never throws (every Communicator's topology
// discovery calls it).
topo::CudaProbe probe_devices();

// One pack of a batch, as every local replica holds it: replica r's pack is
// the concatenation of its pieces (caller tensors, or ranges of them, in
// device memory on `device`). Replica 0 lies on the backend's device;
// replicas (num_gpus_per_worker > 1) may lie on other devices.
struct GpuPiece {
  void* data = nullptr;
  std::size_t count = 0;  // elements of the pack's dtype
};
struct GpuReplicaPack {
  int device = -1;  // -1 = the backend's device
  std::vector<GpuPiece> pieces;
};
struct GpuPack {
  DataType dtype = DataType::f32;
  std::vector<GpuReplicaPack> replicas;  // one per local replica, the same count on every rank
  bool lands_here = true;                // whether this rank's replicas receive the result
};

// A pack staged in device memory: replica r's buffer on devices[r].
struct Packed {
  std::vector<void*> data;
  std::vector<int> devices;
  DataType dtype = DataType::f32;
  std::size_t count = 0;  // elements in each buffer (pieces at 16-byte offsets, padding included)
  bool in_place = false;  // data[0] is the caller's only piece: nothing to unpack
};

// One call as the backend sees it.
struct CallContext {
  const util::Deadline* deadline = nullptr;  // the call's; outlives the call
  plan::CallInfo info;                        // for messages; its strings outlive the call
  // The stream that produced the tensors (CommunicationOptions::stream),
  // or null: the legacy default stream of each tensor's device.
  void* producer = nullptr;
  std::vector<int> devices;  // the tensors' devices, by replica (-1 = the backend's device)
};

class Backend {
 public:
  virtual ~Backend();

  // The CUDA device this rank drives.
  virtual int device() const = 0;

  // Opens a call: checks the tensors' devices (replica 0 on the backend's
  // device, every device one this process sees: InvalidArgument otherwise,
  // before any work), makes the backend's device current (close() restores
  // the caller's), and orders the backend's streams after the producer:
  // nothing strata enqueues reads the tensors before the work the producer
  // stream had enqueued by now. Throws PeerFailure once broken.
  virtual void open(const CallContext& call) = 0;
  // Waits (polling against the call's deadline) until all of the call's GPU
  // work finished: the result is in the tensors. Throws DeadlineExceeded
  // (NCCL communicators aborted), BackendError.
  virtual void complete() = 0;
  // Restores the caller's current device. Never throws; once per open().
  virtual void close() noexcept = 0;

  // The executor of GPU algorithm `algorithm` over `group`, made on first
  // use (collective over the group: NCCL communicators are created then,
  // bounded by topo::setup_seconds(), every member raising the same error on a
  // failure) and kept. Only within an open call.
  plan::Level& level(const Algorithm& algorithm, plan::Group group);
  // The executor that runs host algorithm `algorithm` on CUDA tensors
  // through pinned host buffers over `group`.
  plan::Level& staged(const host::Algorithm& algorithm, plan::Group group);

  // The finish stage's hook for mean: divides `count` elements at `data`
  // (on replica `replica`'s device) by `divisor` in the dtype, enqueued
  // after the call's work.
  virtual void divide(void* data, std::size_t count, DataType dtype, std::size_t divisor, std::size_t replica) = 0;

  // Batches. pack: every replica's pieces into its pack buffer (one kernel
  // per replica on its own stream), or the caller's memory itself when the
  // pack is one piece of one replica that lands here.
  virtual Packed pack(const GpuPack& pack) = 0;
  // Replicas 1.. reduced into replica 0's buffer, in replica order
  // (deterministic), on the backend's device. op != mean.
  virtual void combine(const Packed& packed, ReduceOp op) = 0;
  // Collective: whether every replica of every rank can be an NCCL rank of
  // one communicator (decided from every rank's replica devices, identical
  // on every rank). Throws Mismatch when ranks hold different replica
  // counts, InvalidArgument for a device some rank does not have, on every
  // rank.
  virtual bool replica_ranks_usable(const Packed& packed) = 0;
  // All-reduce over every replica of every rank, one NCCL rank each (only
  // where replica_ranks_usable). op is a native NCCL reduction (plan/nan.hpp).
  virtual void replica_all_reduce(const Packed& packed, ReduceOp op) = 0;
  // Replica 0's buffer to the other replicas' buffers.
  virtual void spread(const Packed& packed) = 0;
  // Every replica's buffer back into its pieces (nothing when in place).
  virtual void unpack(const Packed& packed) = 0;

  // After a timeout or a backend failure: abort the NCCL communicators and
  // refuse further calls (PeerFailure). Never throws.
  virtual void mark_broken(const std::string& reason) noexcept = 0;

 protected:
  virtual std::unique_ptr<plan::Level> make_staged(const host::Algorithm& algorithm, plan::Group group) = 0;
  // Derived destructors call it first: levels refer to the derived state.
  void drop_levels() noexcept { levels_.clear(); }

 private:
  // The level made for (algorithm, group), made by make() the first time.
  template <typename Make>
  plan::Level& made_once(const void* algorithm, plan::Group group, Make&& make);

  struct Made {
    const void* algorithm;  // a gpu::Algorithm or a host::Algorithm
    plan::Group group;
    std::unique_ptr<plan::Level> level;
  };
  std::vector<Made> levels_;
};

// The backend of one rank over `comm`, driving CUDA device `device` (the
// rank's row in `rows`, the GPU control plane's table). `comm` and `split`
// must outlive it. Local: no communication (NCCL communicators are made
// with the levels). Throws Unavailable in a host-only build or when the
// device cannot be used, BackendError when CUDA fails.
std::unique_ptr<Backend> make_backend(MPI_Comm comm, const topo::NodeSplit& split, int device,
                                      std::vector<topo::GpuRow> rows);

}  // namespace strata::gpu
