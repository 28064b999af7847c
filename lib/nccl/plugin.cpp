// The GPU plugin's entry point: what libstrata finds with dlsym once it
// loaded libstrata_gpu.so (gpu/plugin_api.hpp).
#include "cuda/probe.hpp"
#include "gpu/plugin_api.hpp"
#include "nccl/backend.hpp"
#include "strata/version.hpp"

extern "C" const strata::gpu::PluginV1* strata_gpu_plugin_v1() {
  static const strata::gpu::PluginV1 plugin = {STRATA_VERSION_STRING, &strata::cuda::device_available,
                                               &strata::cuda::probe_devices, &strata::nccl::make_backend};
  return &plugin;
}
