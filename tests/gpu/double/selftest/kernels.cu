#include "kernels.hpp"

// The same signatures as strata's (lib/gpu_plugin/cuda and apps/bench): the double
// identifies kernels by their demangled names.
namespace strata::cuda {
__global__ void gate_kernel(const volatile unsigned int* flag, unsigned int target) {
  while (static_cast<int>(*flag - target) < 0) {
  }
}
}  // namespace strata::cuda

namespace strata::bench {
__global__ void busy_kernel(long long nanoseconds) {
  const long long start = clock64();
  while (clock64() - start < nanoseconds) {
  }
}
}  // namespace strata::bench

namespace selftest {

cudaError_t launch_gate(const volatile unsigned int* flag, unsigned int target, cudaStream_t stream) {
  strata::cuda::gate_kernel<<<1, 1, 0, stream>>>(flag, target);
  return cudaGetLastError();
}

cudaError_t launch_busy(long long nanoseconds, cudaStream_t stream) {
  strata::bench::busy_kernel<<<1, 1, 0, stream>>>(nanoseconds);
  return cudaGetLastError();
}

}  // namespace selftest
