// The launcher of strata::bench::busy_kernel (busy_kernel.cu), for the CUDA
// module's C++ side (cuda_streams.cpp). Inside strata-bench-cuda.so only.
#pragma once

#include <cuda_runtime_api.h>

namespace bench::cuda {

// Enqueues strata::bench::busy_kernel on `stream` (one block of one thread
// on the current device), which keeps the GPU busy for `nanoseconds` once
// it starts. Returns the launch's error (cudaGetLastError), cudaSuccess
// when it was enqueued. Hidden like the rest of the module: nvcc's host
// compiler does not get meson's -fvisibility=hidden.
__attribute__((visibility("hidden"))) cudaError_t launch_busy_kernel(cudaStream_t stream, long long nanoseconds);

}  // namespace bench::cuda
