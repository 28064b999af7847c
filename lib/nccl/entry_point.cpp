// The GPU plugin's entry point: what libstrata finds with dlsym once it
// loaded libstrata_gpu.so (gpu/plugin_api.hpp).
#include <type_traits>

#include "cuda/probe.hpp"
#include "gpu/plugin_api.hpp"
#include "nccl/nccl_backend.hpp"
#include "strata/version.hpp"

extern "C" const strata::gpu::PluginV1* strata_gpu_plugin_v1() {
  static const strata::gpu::PluginV1 plugin = {STRATA_VERSION_STRING, &strata::cuda::device_available,
                                               &strata::cuda::probe_devices, &strata::nccl::make_backend};
  return &plugin;
}

static_assert(std::is_same_v<decltype(&strata_gpu_plugin_v1), strata::gpu::PluginEntry>,
              "the entry point has the type libstrata calls it with");
