// What strata-bench needs from CUDA, behind a header without CUDA types:
// probing for devices, device memory for Buffers, and the pinned
// host<->device copy reference. cuda_buffers.cpp implements it in builds
// with CUDA (meson's have_cuda); cuda_stub.cpp in host-only builds, where
// device_count() reports that the bench was built without CUDA.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "buffers.hpp"

namespace bench::cuda {

// Whether this strata-bench was compiled with CUDA and NCCL.
bool built();

// The number of usable CUDA devices in this process (after
// CUDA_VISIBLE_DEVICES). 0 when there are none, with the cause on one line
// in `*why` ("cudaGetDeviceCount failed with <CUDA's error name and text>",
// "... found 0 devices", or "this strata-bench was built without CUDA
// (...)"). Never throws.
int device_count(std::string* why);

// Makes `device` current for this thread. Throws std::runtime_error with
// CUDA's text.
void set_device(int device);

// "0000:3b:00.0", lower case like strata's GpuInfo. Throws std::runtime_error.
std::string pci_bus_id(int device);

// Device memory on `device` (cudaMalloc) with blocking cudaMemcpy to and from
// the host copies. Throws std::runtime_error (on every call that fails,
// naming the call, the size and CUDA's text).
std::unique_ptr<DeviceMemory> device_memory(int device);

// Pinned host <-> device copy bandwidth on `device`, GB/s (1e9 bytes/s):
// the median of `iters` cudaMemcpyAsync copies of `bytes` between a
// cudaMallocHost buffer and a cudaMalloc buffer, each timed with CUDA events
// after one warm-up copy. Local to the calling rank. Throws
// std::runtime_error.
struct CopyBandwidth {
  double d2h_gbps = 0;  // device -> pinned host
  double h2d_gbps = 0;  // pinned host -> device
};
CopyBandwidth pinned_copy_bandwidth(int device, std::size_t bytes, int iters);

}  // namespace bench::cuda
