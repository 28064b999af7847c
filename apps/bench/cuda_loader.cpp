// strata-bench's one seam to CUDA (cuda_buffers.hpp, cuda::nccl_baseline):
// the first device_count() loads strata-bench-cuda.so (cuda_module.hpp) and
// everything else forwards to it. This file alone decides whether CUDA is
// there: in a build without the GPU backend there is no module, and
// device_count() says the bench was built without CUDA; in a GPU build a
// module that cannot be loaded (no libcudart or libnccl on this node) makes
// device_count() quote the loader's error. Either way --memory cuda skips
// (exit 77) with that line. Host runs never call device_count(), so they
// never load the module, the CUDA runtime or NCCL.
#include <dlfcn.h>
#include <fmt/format.h>

#include <filesystem>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include "cuda_buffers.hpp"
#include "cuda_module.hpp"
#include "nccl_baseline.hpp"

// Set by meson.build: 1 with the GPU backend (the module is built), and the
// module's install folder relative to the executable's.
#ifndef STRATA_BENCH_CUDA
#define STRATA_BENCH_CUDA 0
#endif
#ifndef STRATA_BENCH_MODULE_DIR
#define STRATA_BENCH_MODULE_DIR "../lib/strata"
#endif

namespace bench::cuda {
namespace {

struct Loaded {
  const Module* module = nullptr;
  std::string why;  // when `module` is null: one line saying why
};

#if STRATA_BENCH_CUDA

// The module's table from an open handle, or why it is not one.
Loaded entry(void* handle, const std::string& where) {
  dlerror();
  auto get = reinterpret_cast<const Module* (*)()>(dlsym(handle, kModuleEntry));
  if (!get) {
    const char* error = dlerror();
    dlclose(handle);
    return {nullptr, fmt::format("cannot load {}: it has no {} (not strata-bench's CUDA module?): {}", where,
                                 kModuleEntry, error ? error : "no such symbol")};
  }
  const Module* module = get();
  if (!module || module->abi != kModuleAbi) {
    const int abi = module ? module->abi : -1;
    dlclose(handle);
    return {nullptr, fmt::format("cannot use {}: it is from another build (module ABI {}, this strata-bench needs {}); "
                                 "rebuild or reinstall strata-bench and its module together",
                                 where, abi, kModuleAbi)};
  }
  return {module, ""};
}

Loaded open_module(const std::string& name, const std::string& where) {
  dlerror();
  // RTLD_NOW: a missing library or symbol fails here, with the loader's
  // reason, and not in the middle of a run. RTLD_LOCAL: the module's CUDA
  // and NCCL symbols stay its own.
  void* handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* error = dlerror();
    return {nullptr, fmt::format("cannot load {}: {}", where, error ? error : "dlopen failed")};
  }
  return entry(handle, where);
}

Loaded load() {
  // Where the module may be, in order: next to the executable (the build
  // tree), the install folder relative to it (<bindir>/STRATA_BENCH_MODULE_DIR),
  // then the bare name for the loader's own search (LD_LIBRARY_PATH, the
  // executable's RUNPATH: the GPU bundle keeps it in lib/ beside libstrata).
  std::error_code error;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", error);
  std::vector<std::filesystem::path> places;
  if (!error) {
    places.push_back(exe.parent_path() / kModuleFile);
    places.push_back((exe.parent_path() / STRATA_BENCH_MODULE_DIR / kModuleFile).lexically_normal());
  }
  // A module that exists but does not load says why (the library it lacks):
  // that reason is the one to report, not that the next place is empty.
  for (const auto& path : places)
    if (std::filesystem::exists(path, error)) return open_module(path.string(), path.string());
  std::string looked;
  for (const auto& path : places) looked += (looked.empty() ? "" : ", ") + path.parent_path().string();
  Loaded found = open_module(kModuleFile, kModuleFile);
  if (!found.module && !looked.empty()) found.why += fmt::format(" (nor is it in {})", looked);
  return found;
}

#else

Loaded load() {
  return {nullptr,
          "this strata-bench was built without CUDA (meson found no nvcc, cudart or NCCL under -Dnvidia_root, or was "
          "configured with -Dcuda=disabled; `meson setup` prints what it found in its GPU section)"};
}

#endif

// Loaded once, on first need; never unloaded (objects it made may outlive
// any one caller).
const Loaded& loaded() {
  static const Loaded once = load();
  return once;
}

const Module& module(const char* what) {
  const Loaded& l = loaded();
  if (!l.module)
    throw std::logic_error(fmt::format("{}: called without the CUDA module ({}); --memory cuda should have skipped",
                                       what, l.why));
  return *l.module;
}

}  // namespace

bool built() { return STRATA_BENCH_CUDA; }

int device_count(std::string* why) {
  const Loaded& l = loaded();
  if (!l.module) {
    if (why) *why = l.why;
    return 0;
  }
  return l.module->device_count(why);
}

void set_device(int device) { module("set_device").set_device(device); }
std::string device_name(int device) { return module("device_name").device_name(device); }
std::string pci_bus_id(int device) { return module("pci_bus_id").pci_bus_id(device); }
std::unique_ptr<DeviceMemory> device_memory(int device) { return module("device_memory").device_memory(device); }
CopyBandwidth pinned_copy_bandwidth(int device, std::size_t bytes, int iters) {
  return module("pinned_copy_bandwidth").pinned_copy_bandwidth(device, bytes, iters);
}
std::unique_ptr<DeviceStream> device_stream(int device) { return module("device_stream").device_stream(device); }
std::unique_ptr<NcclBaseline> nccl_baseline(MPI_Comm comm, int device) {
  return module("nccl_baseline").nccl_baseline(comm, device);
}

}  // namespace bench::cuda
