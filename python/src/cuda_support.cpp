#include "cuda_support.hpp"

#if STRATA_PY_CUDA
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <fmt/format.h>

#include <atomic>
#include <string>
#include <type_traits>

#include "strata/errors.hpp"
#include "util/where.hpp"
#endif

namespace strata_py::cuda {

#if STRATA_PY_CUDA

namespace {

// The CUDA runtime's soname for the CUDA this module was compiled against
// (CUDART_VERSION 13000: "libcudart.so.13"): the one the library's GPU
// backend uses, so that both share one runtime (current device, streams).
const std::string kCudartName = fmt::format("libcudart.so.{}", CUDART_VERSION / 1000);

// The few runtime calls the module makes, resolved on first need: the
// extension links no libcudart, so `import strata` and host arrays work on
// nodes without the CUDA runtime.
struct Runtime {
  decltype(&cudaGetDeviceCount) get_device_count = nullptr;
  decltype(&cudaPointerGetAttributes) pointer_get_attributes = nullptr;
  decltype(&cudaGetDevice) get_device = nullptr;
  decltype(&cudaSetDevice) set_device = nullptr;
  decltype(&cudaStreamSynchronize) stream_synchronize = nullptr;
  decltype(&cudaGetLastError) get_last_error = nullptr;
  decltype(&cudaGetErrorName) get_error_name = nullptr;
  decltype(&cudaGetErrorString) get_error_string = nullptr;
};

struct Loaded {
  Runtime runtime;
  bool ok = false;
  std::string why;  // when !ok: "cannot load libcudart.so.13: <the loader's error>"
};

Loaded load() {
  Loaded l;
  dlerror();
  // Never closed: the pointers below are used for the life of the process.
  void* handle = dlopen(kCudartName.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* error = dlerror();
    l.why = fmt::format("cannot load {}: {}", kCudartName, error ? error : "dlopen failed");
    return l;
  }
  bool missing = false;
  auto resolve = [&](auto& fn, const char* name) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(handle, name));
    if (!fn && !missing) {
      missing = true;
      l.why = fmt::format("{} has no {}", kCudartName, name);
    }
  };
  resolve(l.runtime.get_device_count, "cudaGetDeviceCount");
  resolve(l.runtime.pointer_get_attributes, "cudaPointerGetAttributes");
  resolve(l.runtime.get_device, "cudaGetDevice");
  resolve(l.runtime.set_device, "cudaSetDevice");
  resolve(l.runtime.stream_synchronize, "cudaStreamSynchronize");
  resolve(l.runtime.get_last_error, "cudaGetLastError");
  resolve(l.runtime.get_error_name, "cudaGetErrorName");
  resolve(l.runtime.get_error_string, "cudaGetErrorString");
  l.ok = !missing;
  return l;
}

std::atomic<bool> attempted{false};

// Loaded once (thread-safe: callers run without the GIL), on first need.
const Loaded& loaded() {
  static const Loaded once = [] {
    Loaded l = load();
    attempted = true;
    return l;
  }();
  return once;
}

}  // namespace

std::string runtime_problem() {
  if (!attempted) return "";
  const Loaded& l = loaded();
  return l.ok ? std::string() : l.why;
}

int device_count() {
  const Loaded& l = loaded();
  if (!l.ok) return 0;
  int count = 0;
  if (l.runtime.get_device_count(&count) != cudaSuccess) {
    l.runtime.get_last_error();  // clear the (non-sticky) error so later CUDA calls start clean
    return 0;
  }
  return count;
}

int device_of(const void* ptr) {
  if (ptr == nullptr || device_count() == 0) return -1;
  const Runtime& rt = loaded().runtime;
  cudaPointerAttributes attributes{};
  if (rt.pointer_get_attributes(&attributes, ptr) != cudaSuccess) {
    rt.get_last_error();
    return -1;
  }
  const bool on_device = attributes.type == cudaMemoryTypeDevice || attributes.type == cudaMemoryTypeManaged;
  return on_device ? attributes.device : -1;
}

void synchronize(std::uintptr_t stream, int device) {
  if (device_count() == 0) return;
  const Runtime& rt = loaded().runtime;
  cudaStream_t handle = stream == 1   ? cudaStreamLegacy
                        : stream == 2 ? cudaStreamPerThread
                                      : reinterpret_cast<cudaStream_t>(stream);
  // The default streams are per device: make the array's device current for
  // the wait, then restore the caller's (the Python program's) choice.
  int previous = -1;
  const bool switch_device = device >= 0 && rt.get_device(&previous) == cudaSuccess && previous != device;
  if (switch_device && rt.set_device(device) != cudaSuccess) {
    rt.get_last_error();
    throw strata::BackendError(
        strata::util::located(fmt::format("cudaSetDevice({}) failed before waiting for the array's stream", device)),
        "CUDA", 0, strata::util::hostname(), strata::util::world_rank());
  }
  const cudaError_t status = rt.stream_synchronize(handle);
  if (switch_device) rt.set_device(previous);
  if (status != cudaSuccess)
    throw strata::BackendError(
        strata::util::located(fmt::format("cudaStreamSynchronize on the array's stream {:#x} (device {}) failed: {} "
                                          "({})",
                                          stream, device, rt.get_error_name(status), rt.get_error_string(status))),
        "CUDA", static_cast<int>(status), strata::util::hostname(), strata::util::world_rank());
}

#else

std::string runtime_problem() { return ""; }
int device_count() { return 0; }
int device_of(const void*) { return -1; }
void synchronize(std::uintptr_t, int) {}

#endif

}  // namespace strata_py::cuda
