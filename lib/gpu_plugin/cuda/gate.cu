// The gate: a stream held until the host opens it. A host stage of a
// stream-ordered call (MPI through pinned memory) runs on strata's progress
// thread after the caller returned; the caller's stream must not run past
// the call until that stage is done, and no event can stand for it (it is
// recorded only later, on another thread). So the caller's stream runs a
// one-thread kernel that polls a word of mapped pinned host memory until
// the host writes the gate's number there, as NCCL's kernels poll its proxy.
#include "gpu_plugin/cuda/check.hpp"
#include "gpu_plugin/cuda/kernels.hpp"

namespace strata::cuda {

// Numbers compare modulo 2^32, so the counter may wrap.
__global__ void gate_kernel(const volatile unsigned int* flag, unsigned int target) {
  while (static_cast<int>(*flag - target) < 0) __nanosleep(2000);
}

void hold_until(const volatile unsigned int* flag, unsigned int target, cudaStream_t stream) {
  void* args[] = {&flag, &target};
  STRATA_CHECK_CUDA(
      cudaLaunchKernel(reinterpret_cast<const void*>(&gate_kernel), dim3(1), dim3(1), args, 0, stream));
}

}  // namespace strata::cuda
