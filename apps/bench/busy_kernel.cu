// --overlap's computation for stream-ordered calls (inside
// strata-bench-cuda.so): one block that keeps one SM busy for a given time,
// so that a collective on another stream of the same device can run beside
// it. The test double recognises the kernel by its name,
// strata::bench::busy_kernel(long long), and runs it by sleeping that long
// on its stream's worker (docs/GPU_DOUBLE.md).
#include "busy_kernel.hpp"

namespace strata::bench {

// Spins until `nanoseconds` have passed on the device's global timer. The
// global timer counts nanoseconds whatever the SM clock does, so the
// duration needs no conversion: clock64() counts SM cycles, and the rate
// that cudaDevAttrClockRate reports is the nominal one, not the clock a
// boosting or throttled SM runs at. Thread 0 alone spins; one block of one
// thread leaves every other SM to the collective.
__global__ void busy_kernel(long long nanoseconds) {
  unsigned long long start = 0, now = 0;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  do {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  } while (static_cast<long long>(now - start) < nanoseconds);
}

}  // namespace strata::bench

namespace bench::cuda {

cudaError_t launch_busy_kernel(cudaStream_t stream, long long nanoseconds) {
  strata::bench::busy_kernel<<<1, 1, 0, stream>>>(nanoseconds);
  return cudaGetLastError();
}

}  // namespace bench::cuda
