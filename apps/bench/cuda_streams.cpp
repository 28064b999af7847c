// strata-bench's streams, inside strata-bench-cuda.so (cuda_module.hpp):
// the stream --stream-ordered gives strata's calls and the NCCL baseline,
// with the events that time what is enqueued on it, and the stream
// --overlap runs its busy kernel on.
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <stdexcept>

#include "busy_kernel.hpp"
#include "cuda_buffers.hpp"
#include "cuda_module.hpp"

namespace bench::cuda {
namespace {

void check(cudaError_t rc, const char* what, int device) {
  if (rc == cudaSuccess) return;
  cudaGetLastError();  // a non-sticky error must not be reported again by the next call
  throw std::runtime_error(
      fmt::format("{} on device {} failed: {} ({})", what, device, cudaGetErrorName(rc), cudaGetErrorString(rc)));
}

// A member of CudaStream, so that what its constructor made before a
// failure is released.
struct StreamResources {
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  StreamResources() = default;
  StreamResources(const StreamResources&) = delete;
  StreamResources& operator=(const StreamResources&) = delete;
  ~StreamResources() {
    // Nothing may still run on the stream when its events go.
    if (stream) cudaStreamSynchronize(stream);
    if (start) cudaEventDestroy(start);
    if (stop) cudaEventDestroy(stop);
    if (stream) cudaStreamDestroy(stream);
  }
};

class CudaStream final : public DeviceStream {
 public:
  explicit CudaStream(int device) : device_(device) {
    check(cudaSetDevice(device), "cudaSetDevice", device);
    check(cudaStreamCreateWithFlags(&r_.stream, cudaStreamNonBlocking), "cudaStreamCreateWithFlags", device);
    check(cudaEventCreate(&r_.start), "cudaEventCreate", device);
    check(cudaEventCreate(&r_.stop), "cudaEventCreate", device);
  }

  strata::StreamHandle handle() const override { return static_cast<strata::StreamHandle>(r_.stream); }
  void mark_start() override { check(cudaEventRecord(r_.start, r_.stream), "cudaEventRecord (start)", device_); }
  void mark_stop() override { check(cudaEventRecord(r_.stop, r_.stream), "cudaEventRecord (stop)", device_); }
  void synchronize() override { check(cudaStreamSynchronize(r_.stream), "cudaStreamSynchronize", device_); }
  double elapsed_seconds() override {
    float ms = 0;
    check(cudaEventElapsedTime(&ms, r_.start, r_.stop), "cudaEventElapsedTime", device_);
    return static_cast<double>(ms) / 1e3;
  }
  void busy(long long nanoseconds) override {
    // A kernel runs on the current device, which must be the stream's.
    check(cudaSetDevice(device_), "cudaSetDevice", device_);
    check(launch_busy_kernel(r_.stream, nanoseconds), "launching strata::bench::busy_kernel", device_);
  }

 private:
  int device_;
  StreamResources r_;
};

}  // namespace

std::unique_ptr<DeviceStream> open_device_stream(int device) { return std::make_unique<CudaStream>(device); }

}  // namespace bench::cuda
