// STRATA_CHECK_CUDA / STRATA_CHECK_NCCL: the GPU siblings of
// STRATA_CHECK_MPI (util/check.hpp). They turn a CUDA or NCCL return code
// into a strata::BackendError at the call site, naming the call,
// file:line, the library's own error text, host and rank.
//
// ncclInProgress is not an error for non-blocking communicators; call
// sites that may see it test for it before using STRATA_CHECK_NCCL.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

namespace strata::cuda {

[[noreturn]] void throw_cuda_error(cudaError_t code, const char* call, const char* file, int line);
[[noreturn]] void throw_nccl_error(ncclResult_t code, const char* call, const char* file, int line);

}  // namespace strata::cuda

#define STRATA_CHECK_CUDA(call)                                                          \
  do {                                                                                   \
    const cudaError_t strata_cuda_rc_ = (call);                                          \
    if (strata_cuda_rc_ != cudaSuccess)                                                  \
      ::strata::cuda::throw_cuda_error(strata_cuda_rc_, #call, __FILE__, __LINE__);      \
  } while (0)

#define STRATA_CHECK_NCCL(call)                                                          \
  do {                                                                                   \
    const ncclResult_t strata_nccl_rc_ = (call);                                         \
    if (strata_nccl_rc_ != ncclSuccess)                                                  \
      ::strata::cuda::throw_nccl_error(strata_nccl_rc_, #call, __FILE__, __LINE__);      \
  } while (0)
