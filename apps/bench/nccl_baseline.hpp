// --baseline nccl: raw NCCL on the same device buffers in the same run, so
// that strata's overhead over NCCL can be read off directly. Implemented in
// nccl_baseline.cpp (builds with CUDA); host-only builds link
// cuda_stub.cpp, whose constructor throws (options.cpp only accepts the
// flag with --memory cuda, which never gets that far without CUDA).
#pragma once

#include <mpi.h>

#include <memory>

#include "collectives.hpp"
#include "options.hpp"

namespace bench {

class NcclBaseline {
 public:
  // Collective over `comm` (a dup of MPI_COMM_WORLD: NCCL's bootstrap stays
  // apart from strata's and the bench's traffic): rank 0 makes the NCCL
  // unique id, MPI_Bcast shares it, and every rank joins its own NCCL
  // communicator on `device` with ncclCommInitRank. Throws
  // std::runtime_error naming the CUDA or NCCL error.
  NcclBaseline(MPI_Comm comm, int device);
  ~NcclBaseline();
  NcclBaseline(const NcclBaseline&) = delete;
  NcclBaseline& operator=(const NcclBaseline&) = delete;

  // One blocking call of the raw NCCL equivalent of `kind` on the device
  // buffers in `b` (which must be CUDA memory on the constructor's device):
  // ncclAllReduce, ncclReduce, ncclBroadcast, or for batch one ncclAllReduce
  // per tensor; then cudaStreamSynchronize, so that it returns with the
  // result in place, as strata's calls do. mean is timed as sum (NCCL's
  // ncclAvg is not what strata computes; the communication is the same).
  // Throws std::runtime_error on a CUDA or NCCL error.
  void run(CollectiveKind kind, const Context& ctx, Buffers& b);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace bench
