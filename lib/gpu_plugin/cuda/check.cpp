#include "gpu_plugin/cuda/check.hpp"

#include <fmt/format.h>

#include "util/where.hpp"
#include "strata/errors.hpp"

namespace strata::cuda {

void throw_cuda_error(cudaError_t code, const char* call, const char* file, int line) {
  // The failed call also left its error as the thread's last error: clear
  // it, or a later kernel launch's check would report it again.
  cudaGetLastError();
  throw BackendError(fmt::format("strata [{}]: CUDA call {} failed at {}:{}: {} ({})", util::where(), call, file,
                                 line, cudaGetErrorString(code), cudaGetErrorName(code)),
                     "CUDA", static_cast<int>(code), util::hostname(), util::world_rank());
}

void throw_nccl_error(ncclResult_t code, const char* call, const char* file, int line) {
  throw BackendError(fmt::format("strata [{}]: NCCL call {} failed at {}:{}: {}; NCCL_DEBUG=WARN says more",
                                 util::where(), call, file, line, ncclGetErrorString(code)),
                     "NCCL", static_cast<int>(code), util::hostname(), util::world_rank());
}

}  // namespace strata::cuda
