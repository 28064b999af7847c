// --baseline nccl: raw NCCL on the same device buffers in the same run, so
// that strata's overhead over NCCL can be read off directly. The NCCL calls
// live in strata-bench-cuda.so (nccl_baseline.cpp); the executable opens one
// through cuda::nccl_baseline (cuda_loader.cpp). options.cpp only accepts
// the flag with --memory cuda, which skips before this is reached when the
// module cannot be loaded.
#pragma once

#include <mpi.h>

#include <memory>

#include "collectives.hpp"
#include "options.hpp"

namespace bench {

class NcclBaseline {
 public:
  virtual ~NcclBaseline() = default;

  // One blocking call of the raw NCCL equivalent of `kind` on the device
  // buffers in `b` (which must be CUDA memory on the baseline's device):
  // ncclAllReduce, ncclReduce, ncclBroadcast, or for batch one ncclAllReduce
  // per tensor; then cudaStreamSynchronize, so that it returns with the
  // result in place, as strata's calls do. mean is timed as sum (NCCL's
  // ncclAvg is not what strata computes; the communication is the same).
  // Throws std::runtime_error on a CUDA or NCCL error.
  virtual void run(CollectiveKind kind, const Context& ctx, Buffers& b) = 0;

  // The same calls enqueued on `stream` (a stream of the baseline's device,
  // cuda::DeviceStream::handle()), returning as soon as NCCL has enqueued
  // them, with no synchronisation (batch: every tensor's ncclAllReduce, one
  // after the other): what a stream-ordered program calls, for
  // --stream-ordered's side-by-side host and device times. Throws
  // std::runtime_error on a CUDA or NCCL error.
  virtual void enqueue(CollectiveKind kind, const Context& ctx, Buffers& b, strata::StreamHandle stream) = 0;
};

namespace cuda {

// Collective over `comm` (a dup of MPI_COMM_WORLD: NCCL's bootstrap stays
// apart from strata's and the bench's traffic): rank 0 makes the NCCL
// unique id, MPI_Bcast shares it, and every rank joins its own NCCL
// communicator on `device` with ncclCommInitRank, on a stream of its own.
// Throws std::runtime_error naming the CUDA or NCCL error, or std::logic_error
// when the CUDA module is not loaded (device_count() said why before).
std::unique_ptr<NcclBaseline> nccl_baseline(MPI_Comm comm, int device);

}  // namespace cuda
}  // namespace bench
