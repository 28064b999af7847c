// The seam between libstrata and the GPU plugin (libstrata_gpu.so, loaded
// at run time: gpu/plugin.hpp): the device primitives of one rank's GPU.
// The plugin implements them with CUDA and NCCL (lib/gpu_plugin/cuda, lib/gpu_plugin/nccl);
// libstrata composes them, CUDA-free: the GPU algorithms' levels
// (lib/gpu/<name>.cpp), host algorithms on CUDA data (gpu/staged.hpp), and
// the execute stage, which opens a call, runs the plan's levels, finishes
// (divide for mean), waits (complete) and closes the call. The backend
// decides nothing about plans.
//
// Every primitive but the call scope itself works within an open call
// (open .. close): work is enqueued in order on the call's one stream on
// the backend's device, and host waits poll against the call's deadline.
// Failures throw BackendError (CUDA, NCCL) or DeadlineExceeded (NCCL
// communicators aborted); the execute stage then marks the backend broken.
//
// A call runs in one of three modes (CallContext::mode): blocking (the
// caller's thread waits for the result: complete()), ordered (the call
// returns once its work is enqueued after the producer stream's, and that
// stream waits for it: enqueued()), or captured (the producer stream is
// capturing a CUDA graph: the work goes on that stream itself, into the
// graph, on memory kept for that graph, and nothing waits or queries).
// The calls one thread makes on a backend are serialized by its owner; the
// primitives under "Any thread" below may also be called from other threads
// (the watcher of ordered work) at the same time.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "gpu/nccl_op.hpp"
#include "gpu/batch_pack.hpp"
#include "plan/job.hpp"
#include "plan/level.hpp"
#include "strata/types.hpp"
#include "util/deadline.hpp"
#include "util/workspace.hpp"

namespace strata::gpu {

// A point in a stream's work that any thread may test: an event from the
// backend's pool, recorded once (mark(), enqueued()), then given back
// (release()).
struct Fence {
  static constexpr std::uint32_t kNone = 0xffffffffu;
  std::uint32_t index = kNone;
  bool valid() const { return index != kNone; }
};

// A caller's stream held by a gate kernel until the host opens it
// (hold(), open_gate()): gates open in the order they were made.
struct Gate {
  std::uint32_t number = 0;
  bool valid() const { return number != 0; }
};

// How a call's work relates to its caller (see the header comment).
enum class Mode { blocking, ordered, captured };

// One call as the backend sees it.
struct CallContext {
  const util::Deadline* deadline = nullptr;  // the call's; outlives the call
  plan::CallInfo info;                        // for messages; its strings outlive the call
  // The stream that produced the tensors (CommunicationOptions::stream),
  // or null: the legacy default stream of each tensor's device.
  void* producer = nullptr;
  std::vector<int> devices;  // the tensors' devices, by replica (-1 = the backend's device)
  // A batch pack (Backend::pack .. unpack): its replicas may lie on any
  // device this process sees, replica 0 included (they are combined onto
  // the backend's device). A single tensor must lie on the backend's device.
  bool packed = false;
  Mode mode = Mode::blocking;
  // Where the producer was when the call was made (mark(), by replica
  // device; one fence when `producer` is given): the call orders after
  // these instead of after the producer as it is at open(). Empty: as it is
  // at open(). A request started earlier than it runs is ordered so.
  std::vector<Fence> ready;
  // false: the call is ordered after its producer already (a batch's later
  // packs follow its first on the backend's streams); open() orders nothing.
  bool after_producer = true;
};

// The replica index of the backend's own device and stream in divide():
// the buffer the plan ran on (a single tensor, or a pack's home).
inline constexpr std::size_t kHome = static_cast<std::size_t>(-1);

// Which way a copy goes (every copy is ordered on the call's stream).
enum class Copy { device_to_device, device_to_host, host_to_device };

// A group's NCCL communicator, as levels see it.
struct NcclComm {
  int rank = 0;
  int size = 1;
};

class Backend {
 public:
  virtual ~Backend() = default;

  // --- The call scope ---------------------------------------------------
  // The CUDA device this rank drives.
  virtual int device() const = 0;
  // Opens a call: checks the tensors' devices (a single tensor on the
  // backend's device, every replica of a pack on a device this process sees:
  // InvalidArgument otherwise, before any work), makes the backend's device current (close() restores
  // the caller's), and orders the backend's streams after the producer:
  // nothing strata enqueues reads the tensors before the work the producer
  // stream had enqueued by now. Throws PeerFailure once broken.
  virtual void open(const CallContext& call) = 0;
  // Blocking mode: waits (polling against the call's deadline) until all of
  // the call's GPU work finished: the result is in the tensors. Throws
  // DeadlineExceeded (NCCL communicators aborted), BackendError.
  virtual void complete() = 0;
  // Ordered mode: records a fence after all of the call's work (every
  // replica's stream) and makes the producer stream, when the call has
  // one, wait for it; returns the fence, for the caller to test and
  // release. Captured mode: nothing to record; returns no fence. Never
  // waits for the GPU.
  virtual Fence enqueued() = 0;
  // Restores the caller's current device. Never throws; once per open().
  virtual void close() noexcept = 0;
  // After a timeout or a backend failure: abort the NCCL communicators,
  // open every gate (a held stream must not wait for ever) and refuse
  // further calls (PeerFailure). Any thread. Never throws.
  virtual void mark_broken(const std::string& reason) noexcept = 0;

  // --- Any thread ---------------------------------------------------------
  // A fence after the work enqueued so far on `stream` (a cudaStream_t;
  // null: the legacy default stream of `device`).
  virtual Fence mark(void* stream, int device) = 0;
  // Whether `fence` has passed. Throws BackendError when the device failed.
  virtual bool passed(Fence fence) = 0;
  // Gives a fence back to the pool (once it passed, or was given up on).
  virtual void release(Fence fence) noexcept = 0;
  // The first asynchronous error of the backend's NCCL communicators, or "".
  virtual std::string async_error() = 0;
  // Holds `stream` (the caller's) with a gate kernel until open_gate() of
  // this gate or of a later one. Not in captured mode.
  virtual Gate hold(void* stream) = 0;
  virtual void open_gate(Gate gate) noexcept = 0;
  // Frees memory that grown buffers outgrew once every stream of the
  // backend is idle (else keeps it for a later try). Never throws.
  virtual void reclaim() noexcept = 0;

  // --- What the open call runs over on the host ---------------------------
  // The MPI communicator of a group (the communicator, its node, its
  // cross-node group), for host transfers and ranks.
  virtual MPI_Comm mpi(plan::Group group) const = 0;
  // The open call's deadline and description (host::Transport takes them).
  virtual const util::Deadline& deadline() const = 0;
  virtual const plan::CallInfo& info() const = 0;
  // Host scratch for host algorithms run by GPU levels (kept across calls,
  // leaked rather than freed when the backend ends broken).
  virtual util::Workspace& workspace() = 0;

  // --- Memory: grow-only, kept across calls ---------------------------------
  // Device scratch slot 0..3 of at least `bytes` bytes on the backend's
  // device: 0 and 1 for levels, 2 for packs (and a flat reduce_scatter's
  // whole result: the two never share a call), 3 for the NaN-keeping
  // exchange. Valid until the same slot is asked for more. A captured
  // call gets memory of its own instead, kept while the backend lives.
  virtual void* device_scratch(int slot, std::size_t bytes) = 0;
  // Pinned buffer `index` of the staging ring, at least `bytes` bytes:
  // chunked copies reuse a few of these, never the whole tensor.
  virtual void* staging(std::size_t index, std::size_t bytes) = 0;

  // --- Stream-ordered work --------------------------------------------------
  virtual void copy(void* dst, const void* src, std::size_t bytes, Copy direction) = 0;
  // strata's reduce kernel: dst[i] = a[i] op b[i], i < count (dst may be
  // exactly a or b). op != mean. Bit-identical to the host kernels.
  virtual void reduce(void* dst, const void* a, const void* b, std::size_t count, DataType dtype, ReduceOp op) = 0;
  // The finish stage's hook for mean: divides `count` elements at `data`
  // (on replica `replica`'s device, on its stream; kHome: the backend's) by
  // `divisor` in the dtype, after the call's work.
  virtual void divide(void* data, std::size_t count, DataType dtype, std::size_t divisor, std::size_t replica) = 0;
  // Records event `index` (any small number) after the work enqueued so far.
  virtual void record(std::size_t event) = 0;

  // --- Host waits (polling against the call's deadline) ------------------------
  // Until event `index`, as last recorded, has passed.
  virtual void wait_for(std::size_t event) = 0;
  // Until all of the call's GPU work (every replica's stream) finished.
  virtual void wait() = 0;

  // --- NCCL over a group ---------------------------------------------------
  // The group's NCCL communicator: created on first use, collectively over
  // the group (bounded by topo::setup_seconds(), every member raising the
  // same error on a failure), and kept. Its ranks are the group's MPI ranks.
  virtual NcclComm nccl_comm(plan::Group group) = 0;
  // Issues `ops` in order as one NCCL group on the group's communicator
  // (made by nccl_comm before), on the call's stream, and settles the
  // enqueueing. `what` names the group in errors. A reducing op NCCL does
  // not reduce as strata does (plan::nccl_reduces) is an internal error
  // (BackendError), never sent.
  virtual void nccl(plan::Group group, std::span<const NcclOp> ops, const char* what) = 0;

  // --- Batches --------------------------------------------------------------
  // Every replica's pieces into its pack buffer (one kernel per replica on
  // its own stream), or the caller's memory itself when the pack is one
  // piece of one replica that lands here.
  virtual Packed pack(const GpuPack& pack) = 0;
  // The first `replicas` replicas' buffers reduced into the pack's home on
  // the backend's device, in replica order (deterministic): every replica
  // for a reduction, replica 0 alone for a broadcast (its source). Nothing
  // to do when that is replica 0 alone and it is the home. op != mean.
  virtual void combine(const Packed& packed, ReduceOp op, std::size_t replicas) = 0;
  // Collective: whether every replica of every rank can be an NCCL rank of
  // one communicator (decided from every rank's replica devices, identical
  // on every rank). Throws Mismatch when ranks hold different replica
  // counts, InvalidArgument for a device some rank does not have, on every
  // rank.
  virtual bool replica_ranks_usable(const Packed& packed) = 0;
  // All-reduce over every replica of every rank, one NCCL rank each (only
  // where replica_ranks_usable). op is a native NCCL reduction (plan/nan.hpp).
  virtual void replica_all_reduce(const Packed& packed, ReduceOp op) = 0;
  // The pack's home to every replica's buffer that is not the home itself.
  virtual void spread(const Packed& packed) = 0;
  // Every replica's buffer back into its pieces (nothing when in place).
  virtual void unpack(const Packed& packed) = 0;
};

}  // namespace strata::gpu
