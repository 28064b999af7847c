// What this process sees of CUDA, asked of the CUDA runtime: the plugin's
// side of gpu::device_available and gpu::probe_devices (gpu/plugin.hpp).
// Neither throws, and neither leaves a CUDA error sticky for later calls.
#pragma once

#include <string>

#include "topo/discover.hpp"

namespace strata::cuda {

// Whether a CUDA device is usable now (driver loaded, cudaGetDeviceCount >
// 0); on false, `why` (if non-null) gets a one-line reason.
bool device_available(std::string* why);

// Every device's PCI bus id and compute mode, or why there is none.
topo::CudaProbe probe_devices();

}  // namespace strata::cuda
