// The GPU plugin's entry point: what libstrata finds with dlsym once it
// loaded libstrata_gpu.so (gpu/plugin_api.hpp).
#include <type_traits>

#include "gpu_plugin/cuda/capture.hpp"
#include "gpu_plugin/cuda/probe.hpp"
#include "gpu/plugin_api.hpp"
#include "gpu_plugin/nccl/nccl_backend.hpp"
#include "strata/version.hpp"

extern "C" const strata::gpu::PluginV2* strata_gpu_plugin_v2() {
  static const strata::gpu::PluginV2 plugin = {STRATA_VERSION_STRING,          &strata::cuda::device_available,
                                               &strata::cuda::probe_devices,   &strata::nccl::make_backend,
                                               &strata::cuda::capture_status, &strata::cuda::relax_capture_checks};
  return &plugin;
}

static_assert(std::is_same_v<decltype(&strata_gpu_plugin_v2), strata::gpu::PluginEntry>,
              "the entry point has the type libstrata calls it with");
