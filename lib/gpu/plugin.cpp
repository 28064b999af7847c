#include "gpu/plugin.hpp"

#include <dlfcn.h>
#include <fmt/format.h>
#include <unistd.h>

#include <string>

#include "gpu/plugin_api.hpp"
#include "strata/errors.hpp"
#include "strata/version.hpp"
#include "util/where.hpp"

namespace strata::gpu {
namespace {

constexpr const char* kNotBuilt =
    "this build of strata has no GPU backend (configured with -Dcuda=disabled, or nvcc/NCCL were not found); "
    "rebuild with -Dcuda=enabled on a machine with the CUDA toolkit and NCCL, or pass host tensors";

// The plugin's table, or why there is none.
struct Loaded {
  const PluginV2* plugin = nullptr;
  std::string problem;
};

// The folder libstrata.so was loaded from ("" when unknown).
std::string own_folder() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<const void*>(&probe_devices), &info) == 0 || !info.dli_fname) return "";
  const std::string path = info.dli_fname;
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash);
}

// dlerror()'s text, or `fallback` when it has none.
std::string last_error(const char* fallback) {
  const char* error = dlerror();
  return error ? error : fallback;
}

Loaded load() {
  if (!built()) return {nullptr, kNotBuilt};
  // Next to libstrata first; then the soname through the loader's search
  // path. A file next to libstrata that fails to load (a missing CUDA
  // runtime names itself in dlerror's text) is the reason to report.
  const std::string folder = own_folder();
  const std::string beside = folder.empty() ? "" : folder + "/" + kPluginFile;
  void* handle = nullptr;
  if (!beside.empty()) {
    handle = dlopen(beside.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle && access(beside.c_str(), F_OK) == 0)
      return {nullptr, fmt::format("the GPU backend plugin {} cannot be loaded: {}; it needs the CUDA runtime and "
                                   "NCCL strata was built with",
                                   beside, last_error("dlopen failed"))};
  }
  if (!handle) handle = dlopen(kPluginFile, RTLD_NOW | RTLD_LOCAL);
  if (!handle)
    return {nullptr, fmt::format("the GPU backend plugin {} is not next to libstrata (in {}) and could not be "
                                 "loaded through the loader's search path: {}",
                                 kPluginFile, folder.empty() ? "an unknown folder" : folder,
                                 last_error("dlopen failed"))};
  dlerror();
  const auto entry = reinterpret_cast<PluginEntry>(dlsym(handle, kPluginEntry));
  if (!entry)
    return {nullptr, fmt::format("the GPU backend plugin {} has no entry point: {}", kPluginFile,
                                 last_error(kPluginEntry))};
  const PluginV2* plugin = entry();
  if (std::string(plugin->strata_version) != STRATA_VERSION_STRING) {
    Dl_info info{};
    const bool named = dladdr(reinterpret_cast<const void*>(entry), &info) != 0 && info.dli_fname;
    return {nullptr, fmt::format("the GPU backend plugin {} belongs to strata {}, but this libstrata is {}: "
                                 "install the plugin built with this strata",
                                 named ? info.dli_fname : kPluginFile, plugin->strata_version,
                                 STRATA_VERSION_STRING)};
  }
  return {plugin, ""};
}

// Loaded on first use, once per process (a function-local static's
// initialisation is thread-safe); never unloaded.
const Loaded& loaded() {
  static const Loaded once = load();
  return once;
}

}  // namespace

bool built() { return STRATA_HAVE_CUDA; }

bool device_available(std::string* why) {
  const Loaded& plugin = loaded();
  if (plugin.plugin) return plugin.plugin->device_available(why);
  if (why) *why = plugin.problem;
  return false;
}

topo::CudaProbe probe_devices() {
  const Loaded& plugin = loaded();
  if (plugin.plugin) return plugin.plugin->probe_devices();
  return {{}, {}, plugin.problem};
}

Capture capture_status(void* stream) {
  const Loaded& plugin = loaded();
  return plugin.plugin ? plugin.plugin->capture_status(stream) : Capture::none;
}

void relax_capture_checks() {
  if (const Loaded& plugin = loaded(); plugin.plugin) plugin.plugin->relax_capture_checks();
}

std::unique_ptr<Backend> make_backend(MPI_Comm comm, const topo::NodeSplit& split, int device,
                                      std::vector<topo::GpuRow> rows) {
  const Loaded& plugin = loaded();
  if (!plugin.plugin)
    throw Unavailable(fmt::format("strata [{}]: CUDA tensors are unavailable: {}", util::where(), plugin.problem));
  return plugin.plugin->make_backend(comm, split, device, std::move(rows));
}

}  // namespace strata::gpu
