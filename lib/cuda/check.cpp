#include "cuda/check.hpp"

#include <fmt/format.h>

#include "core/where.hpp"
#include "strata/errors.hpp"

namespace strata::cuda {

void throw_cuda_error(cudaError_t code, const char* call, const char* file, int line) {
  throw BackendError(fmt::format("strata [{}]: CUDA call {} failed at {}:{}: {} ({})", core::where(), call, file,
                                 line, cudaGetErrorString(code), cudaGetErrorName(code)),
                     "CUDA", static_cast<int>(code), core::hostname(), core::world_rank());
}

void throw_nccl_error(ncclResult_t code, const char* call, const char* file, int line) {
  throw BackendError(fmt::format("strata [{}]: NCCL call {} failed at {}:{}: {}; NCCL_DEBUG=WARN says more",
                                 core::where(), call, file, line, ncclGetErrorString(code)),
                     "NCCL", static_cast<int>(code), core::hostname(), core::world_rank());
}

}  // namespace strata::cuda
