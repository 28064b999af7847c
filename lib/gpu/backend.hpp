// The seam between the core and the GPU backend. The core validates a call on
// CUDA tensors, picks the spec entry for its size, and hands a GpuJob to the
// Backend; the backend moves the bytes (NCCL inside and across nodes, or host
// staging through pinned buffers for host algorithms across nodes) and
// returns when the result is in the output tensor.
//
// This header needs no CUDA or NCCL headers, so the core compiles it in
// every build. Host-only builds (-Dcuda=disabled, or no nvcc/NCCL found)
// link lib/gpu/backend_stub.cpp: built() is false, device_available() false
// with a reason, and make_backend() throws strata::Unavailable.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "host/algorithm.hpp"
#include "util/deadline.hpp"
#include "strata/types.hpp"
#include "topo/node_split.hpp"

namespace strata::gpu {

// Compiled with CUDA and NCCL.
bool built();

// Whether a CUDA device is usable now (driver loaded, cudaGetDeviceCount > 0).
// Never throws; on false, `why` (if non-null) gets a one-line reason.
bool device_available(std::string* why = nullptr);

// The algorithm names the backend serves natively (valid in specs):
// "nccl", "psgpu", and "a/b" with a in {nccl, psgpu} and b = nccl or any host
// algorithm (xring, rechd, pscpu, tree, mpi). Any other name (a host
// algorithm such as "xring" or "pscpu/pscpu") runs the host algorithm flat on
// pinned host copies of the CUDA tensors.
bool serves_natively(std::string_view algorithm);

using strata::Collective;  // all_reduce, reduce, broadcast

// One validated collective on CUDA memory, as the backend sees it.
struct GpuJob {
  const void* in = nullptr;  // device pointer; for broadcast == out
  void* out = nullptr;       // device pointer; == in for in place; may be null on non-roots of reduce
  std::size_t count = 0;     // may be 0 (returns at once: nothing is collective in the backend at 0)
  DataType dtype = DataType::f32;
  ReduceOp op = ReduceOp::sum;    // mean allowed: the backend reduces with sum and divides by `contributors`
  std::size_t contributors = 1;   // mean's divisor (ranks x replicas); ignored for other ops
  int root = 0;                   // reduce and broadcast
  int device = -1;                // the tensors' CUDA device; -1 = the backend's device
  std::string_view algorithm = "nccl";  // the planned name ("nccl", "nccl/xring", "psgpu", "xring", ...)
  // The host algorithm of a host-staged level: the flat algorithm when it
  // is a host one, else the cross-node level of "a/b" when that is a host
  // one; null otherwise. The planner guarantees it serves the collective.
  const host::Algorithm* host_algorithm = nullptr;
  int shards = 1;                 // the spec entry's shard count
  std::size_t chunk_bytes = 0;    // pipeline granularity of host staging; 0 = default (4 MiB)
  std::uint64_t sequence = 0;     // the communicator's call number, for messages
};

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
  Collective collective = Collective::all_reduce;
  std::vector<GpuReplicaPack> replicas;  // one per local replica, the same count on every rank
  bool lands_here = true;                // whether this rank's replicas receive the result
};

class Backend {
 public:
  virtual ~Backend();

  // The CUDA device this rank drives (see make_backend).
  virtual int device() const = 0;

  // Blocking collectives: when they return, the result is in job.out (the
  // GPU work is complete). Throws DeadlineExceeded when `deadline` passes
  // (NCCL communicators are aborted), BackendError for CUDA/NCCL/MPI
  // failures, Unavailable when the algorithm cannot run here (e.g. two ranks
  // of one NCCL communicator share a GPU), PeerFailure once broken.
  virtual void all_reduce(const GpuJob& job, const util::Deadline& deadline) = 0;
  virtual void reduce(const GpuJob& job, const util::Deadline& deadline) = 0;
  virtual void broadcast(const GpuJob& job, const util::Deadline& deadline) = 0;

  // One pack of a batch, in place in the callers' tensors: every replica's
  // pieces are packed (one kernel per replica) unless the pack is one piece
  // of one replica, the replicas are combined, `proto`'s algorithm runs
  // across ranks, and where `lands_here` every replica's pieces receive the
  // result (one unpack kernel each). Replicas combine in replica order on
  // the backend's device (peer copies and strata's kernels), except for the
  // flat "nccl" all-reduce, which runs one NCCL rank per replica device in
  // group calls (distinct devices required: Unavailable otherwise).
  // proto.count is the pack's element count; proto.contributors counts
  // replicas of all ranks. Blocking; throws as all_reduce, and Mismatch when
  // ranks hold different replica counts for NCCL's group path.
  virtual void run_pack(const GpuPack& pack, const GpuJob& proto, const util::Deadline& deadline) = 0;

};

// The backend of one rank over `comm`, driving CUDA device `device` (the
// rank's topology assignment, see strata::GpuAssignment). Local: no
// communication (NCCL communicators, whole job, per node and per local
// index across nodes, are created lazily on first use, collectively).
// `comm` and `split` must outlive the backend. Throws Unavailable in a
// host-only build or when the device cannot be used.
std::unique_ptr<Backend> make_backend(MPI_Comm comm, const topo::NodeSplit& split, int device);

// The PCI bus ids of the CUDA devices this process sees, by CUDA device
// index; empty in a host-only build or without a usable device. Never
// throws (topology discovery calls it in every program).
std::vector<std::string> visible_devices();

}  // namespace strata::gpu
