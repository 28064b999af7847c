// What strata-bench needs from CUDA, behind a header without CUDA types:
// probing for devices, device memory for Buffers, and the pinned
// host<->device copy reference. The executable's implementation
// (cuda_loader.cpp) loads strata-bench-cuda.so on the first call of
// device_count() and forwards to it (cuda_buffers.cpp, in the module); where
// the module cannot be loaded, or the build has no CUDA, device_count()
// returns 0 and says why, and --memory cuda skips before anything else here
// is called.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "buffers.hpp"

namespace bench::cuda {

// Whether this strata-bench was compiled with CUDA and NCCL (the same on
// every rank: one binary). Whether its module loads is device_count()'s
// business, which may differ between nodes.
bool built();

// The number of usable CUDA devices in this process (after
// CUDA_VISIBLE_DEVICES). 0 when there are none, with the cause on one line
// in `*why` ("cannot load strata-bench-cuda.so: <the loader's error, which
// names the missing library>", "cudaGetDeviceCount failed with <CUDA's error
// name and text>", "... found 0 devices", or "this strata-bench was built
// without CUDA (...)"). Loads the module on its first call. Never throws.
int device_count(std::string* why);

// The functions below need the module loaded (device_count() > 0 first);
// without it they throw std::logic_error.

// Makes `device` current for this thread. Throws std::runtime_error with
// CUDA's text.
void set_device(int device);

// cudaGetDeviceProperties' name of `device` ("NVIDIA H100 80GB HBM3"; the
// test double's say "simulated"). Throws std::runtime_error with CUDA's text.
std::string device_name(int device);

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
