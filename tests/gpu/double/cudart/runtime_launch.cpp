// Runtime entry points that nvcc's generated code calls: module and kernel
// registration when a library loads, and kernel launches (<<<...>>> pushes
// the configuration, the host stub pops it and launches).
#include <fmt/format.h>

#include <vector>

#include "call.hpp"
#include "kernels.hpp"

using namespace gpu_double;

namespace {

struct Configuration {
  dim3 grid, block;
  std::size_t shared;
  cudaStream_t stream;
};
thread_local std::vector<Configuration> pushed;

}  // namespace

extern "C" {

void** __cudaRegisterFatBinary(void*) {
  static void* handle = nullptr;  // one handle serves every module: the double keeps no per-module state
  return &handle;
}

void __cudaRegisterFatBinaryEnd(void**) {}
void __cudaUnregisterFatBinary(void**) {}

void __cudaRegisterFunction(void**, const char* host_function, char*, const char* device_name, int, uint3*, uint3*,
                            dim3*, dim3*, int*) {
  register_kernel(host_function, device_name);
}

void __cudaRegisterVar(void**, char*, char*, const char* name, int, size_t, int, int) {
  violation("__cudaRegisterVar", fmt::format("device variable {} is not simulated by the test double", name));
}

unsigned __cudaPushCallConfiguration(dim3 grid, dim3 block, size_t shared, struct CUstream_st* stream) {
  pushed.push_back({grid, block, shared, stream});
  return 0;
}

cudaError_t __cudaPopCallConfiguration(dim3* grid, dim3* block, size_t* shared, void* stream) {
  if (pushed.empty()) {
    violation("__cudaPopCallConfiguration", "no launch configuration was pushed");
    return cudaErrorInvalidConfiguration;
  }
  const Configuration c = pushed.back();
  pushed.pop_back();
  *grid = c.grid, *block = c.block, *shared = c.shared;
  *static_cast<cudaStream_t*>(stream) = c.stream;
  return cudaSuccess;
}

cudaError_t __cudaGetKernel(cudaKernel_t* kernel, const void* host_function) {
  const Kernel* k = kernel_of(host_function);
  if (!k) {
    violation("__cudaGetKernel", "a kernel stub that was never registered");
    return cudaErrorInvalidDeviceFunction;
  }
  *kernel = reinterpret_cast<cudaKernel_t>(const_cast<Kernel*>(k));
  return cudaSuccess;
}

cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 grid, dim3 block, void** args, size_t shared,
                               cudaStream_t stream) {
  if (!kernel) {
    violation("kernel launch", "the kernel handle is null (its registration failed)");
    set_last_error(cudaErrorInvalidDeviceFunction);
    return cudaErrorInvalidDeviceFunction;
  }
  return launch("kernel launch", *reinterpret_cast<const Kernel*>(kernel), grid, block, args, shared, stream);
}

cudaError_t cudaLaunchKernel(const void* function, dim3 grid, dim3 block, void** args, size_t shared,
                             cudaStream_t stream) {
  const Kernel* k = kernel_of(function);
  if (!k) {
    violation("cudaLaunchKernel", "the function is not a registered kernel");
    set_last_error(cudaErrorInvalidDeviceFunction);
    return cudaErrorInvalidDeviceFunction;
  }
  return launch("cudaLaunchKernel", *k, grid, block, args, shared, stream);
}

}  // extern "C"
