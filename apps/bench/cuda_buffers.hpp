// What strata-bench needs from CUDA, behind a header without CUDA types:
// probing for devices, device memory for Buffers, streams with events for
// --stream-ordered and --overlap, and the pinned host<->device copy
// reference. The executable's implementation
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
#include "strata/options.hpp"

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

// A CUDA stream of the bench's own on one device (non-blocking: it does not
// wait for the legacy default stream, as a framework's streams do not),
// with a pair of events to time what is enqueued between mark_start() and
// mark_stop() on it. --stream-ordered passes it to strata's calls
// (CommunicationOptions::stream) and to the NCCL baseline; --overlap runs
// its busy kernel on another one. Every method throws std::runtime_error
// naming the CUDA call and CUDA's text.
class DeviceStream {
 public:
  virtual ~DeviceStream() = default;
  // The cudaStream_t.
  virtual strata::StreamHandle handle() const = 0;
  // Records the start / the stop event on the stream.
  virtual void mark_start() = 0;
  virtual void mark_stop() = 0;
  // Returns when everything enqueued on the stream so far has completed.
  virtual void synchronize() = 0;
  // Seconds between the last mark_start() and mark_stop() as the device
  // saw them (cudaEventElapsedTime, about 0.5 us resolution). Call it after
  // synchronize().
  virtual double elapsed_seconds() = 0;
  // Enqueues strata::bench::busy_kernel (busy_kernel.cu): one block that
  // keeps the device busy for `nanoseconds` once it starts.
  virtual void busy(long long nanoseconds) = 0;
};

// A new stream on `device` (made current). Throws std::runtime_error.
std::unique_ptr<DeviceStream> device_stream(int device);

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
