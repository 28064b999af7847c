// What the GPU plugin (libstrata_gpu.so) gives libstrata: one extern "C"
// entry point returning a table of the few functions libstrata calls
// directly; everything else goes through the Backend it makes
// (gpu/backend.hpp). The plugin is built from the same sources and headers
// as libstrata, so the table holds C++ types; its strata_version lets
// libstrata refuse a plugin of another version instead of misreading it.
// The _v2 in the entry point's name is the table's layout: a change to it
// is a new name.
#pragma once

#include <mpi.h>

#include <memory>
#include <string>
#include <vector>

#include "gpu/backend.hpp"
#include "gpu/plugin.hpp"
#include "topo/discover.hpp"
#include "topo/gpu_plane.hpp"
#include "topo/node_split.hpp"

namespace strata::gpu {

struct PluginV2 {
  // STRATA_VERSION_STRING of the strata the plugin was built with.
  const char* strata_version;
  // As gpu::device_available, gpu::probe_devices and gpu::make_backend
  // (gpu/plugin.hpp) once the plugin is loaded.
  bool (*device_available)(std::string* why);
  topo::CudaProbe (*probe_devices)();
  std::unique_ptr<Backend> (*make_backend)(MPI_Comm comm, const topo::NodeSplit& split, int device,
                                           std::vector<topo::GpuRow> rows);
  // As gpu::capture_status and gpu::relax_capture_checks.
  Capture (*capture_status)(void* stream);
  void (*relax_capture_checks)();
};

// The entry point: `extern "C"`, named kPluginEntry, of this type
// (lib/gpu_plugin/nccl/entry_point.cpp defines it); it never returns null.
using PluginEntry = const PluginV2* (*)();
inline constexpr const char* kPluginEntry = "strata_gpu_plugin_v2";
// The plugin's file name (its soname).
inline constexpr const char* kPluginFile = "libstrata_gpu.so.0";

}  // namespace strata::gpu
