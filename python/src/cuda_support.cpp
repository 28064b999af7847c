#include "cuda_support.hpp"

#if STRATA_PY_CUDA
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include "strata/errors.hpp"
#endif

namespace strata_py::cuda {

#if STRATA_PY_CUDA

int device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // clear the (non-sticky) error so later CUDA calls start clean
    return 0;
  }
  return count;
}

int device_of(const void* ptr) {
  if (ptr == nullptr || device_count() == 0) return -1;
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, ptr) != cudaSuccess) {
    cudaGetLastError();
    return -1;
  }
  const bool on_device = attributes.type == cudaMemoryTypeDevice || attributes.type == cudaMemoryTypeManaged;
  return on_device ? attributes.device : -1;
}

void synchronize(std::uintptr_t stream, int device) {
  if (device_count() == 0) return;
  cudaStream_t handle = stream == 1   ? cudaStreamLegacy
                        : stream == 2 ? cudaStreamPerThread
                                      : reinterpret_cast<cudaStream_t>(stream);
  // The default streams are per device: make the array's device current for
  // the wait, then restore the caller's (the Python program's) choice.
  int previous = -1;
  const bool switch_device = device >= 0 && cudaGetDevice(&previous) == cudaSuccess && previous != device;
  if (switch_device && cudaSetDevice(device) != cudaSuccess) {
    cudaGetLastError();
    throw strata::BackendError(fmt::format("strata (python): cudaSetDevice({}) failed before waiting for the "
                                           "array's stream",
                                           device),
                               "CUDA", 0, "", -1);
  }
  const cudaError_t status = cudaStreamSynchronize(handle);
  if (switch_device) cudaSetDevice(previous);
  if (status != cudaSuccess)
    throw strata::BackendError(fmt::format("strata (python): cudaStreamSynchronize on the array's stream {:#x} "
                                           "(device {}) failed: {} ({})",
                                           stream, device, cudaGetErrorName(status), cudaGetErrorString(status)),
                               "CUDA", static_cast<int>(status), "", -1);
}

#else

int device_count() { return 0; }
int device_of(const void*) { return -1; }
void synchronize(std::uintptr_t, int) {}

#endif

}  // namespace strata_py::cuda
