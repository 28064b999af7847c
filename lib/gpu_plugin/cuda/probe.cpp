#include "gpu_plugin/cuda/probe.hpp"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

namespace strata::cuda {

bool device_available(std::string* why) {
  int count = 0;
  const cudaError_t rc = cudaGetDeviceCount(&count);
  if (rc != cudaSuccess || count == 0) {
    if (why)
      *why = rc != cudaSuccess
                 ? fmt::format("no usable CUDA device: cudaGetDeviceCount failed with {} ({})",
                               cudaGetErrorName(rc), cudaGetErrorString(rc))
                 : std::string("no CUDA device: cudaGetDeviceCount found 0 devices");
    cudaGetLastError();  // do not leave the error sticky for later calls
    return false;
  }
  return true;
}

topo::CudaProbe probe_devices() {
  topo::CudaProbe probe;
  if (!device_available(&probe.problem)) return probe;
  int count = 0;
  cudaGetDeviceCount(&count);
  for (int device = 0; device < count; ++device) {
    char bus[32] = {};
    int mode = -1;
    if (cudaDeviceGetPCIBusId(bus, int(sizeof bus), device) != cudaSuccess) {
      cudaGetLastError();  // not sticky: later calls must see their own errors
      probe = {};
      probe.problem = fmt::format("cudaDeviceGetPCIBusId failed for CUDA device {}", device);
      return probe;
    }
    if (cudaDeviceGetAttribute(&mode, cudaDevAttrComputeMode, device) != cudaSuccess) {
      cudaGetLastError();
      mode = -1;
    }
    probe.bus_ids.emplace_back(bus);
    probe.modes.push_back(mode);
  }
  return probe;
}

}  // namespace strata::cuda
