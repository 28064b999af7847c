// Launchers of the two kernels the double knows by name besides strata's
// arithmetic ones, compiled by nvcc in kernels.cu with the names strata
// gives them, so that the double's own test launches them as strata does.
#pragma once

#include <cuda_runtime_api.h>

namespace selftest {

// strata::cuda::gate_kernel<<<1, 1, 0, stream>>>(flag, target); returns cudaGetLastError().
cudaError_t launch_gate(const volatile unsigned int* flag, unsigned int target, cudaStream_t stream);
// strata::bench::busy_kernel<<<1, 1, 0, stream>>>(nanoseconds); returns cudaGetLastError().
cudaError_t launch_busy(long long nanoseconds, cudaStream_t stream);

}  // namespace selftest
