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
  decltype(&cudaEventCreateWithFlags) event_create_with_flags = nullptr;
  decltype(&cudaEventRecord) event_record = nullptr;
  decltype(&cudaStreamWaitEvent) stream_wait_event = nullptr;
  decltype(&cudaEventDestroy) event_destroy = nullptr;
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
  resolve(l.runtime.event_create_with_flags, "cudaEventCreateWithFlags");
  resolve(l.runtime.event_record, "cudaEventRecord");
  resolve(l.runtime.stream_wait_event, "cudaStreamWaitEvent");
  resolve(l.runtime.event_destroy, "cudaEventDestroy");
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

cudaStream_t stream_of(std::uintptr_t stream) {
  return stream == 1 ? cudaStreamLegacy : stream == 2 ? cudaStreamPerThread : reinterpret_cast<cudaStream_t>(stream);
}

[[noreturn]] void cuda_failed(const Runtime& rt, cudaError_t status, const std::string& what) {
  rt.get_last_error();  // clear a non-sticky error, so that strata's next CUDA call starts clean
  throw strata::BackendError(
      strata::util::located(fmt::format("{} failed: {} ({})", what, rt.get_error_name(status),
                                        rt.get_error_string(status))),
      "CUDA", static_cast<int>(status), strata::util::hostname(), strata::util::world_rank());
}

// Makes `device` current (-1: leaves the current one) until destroyed, then
// restores the caller's (the Python program's) choice: the default streams
// are per device.
class DeviceScope {
 public:
  DeviceScope(const Runtime& rt, int device, const char* purpose) : rt_(rt) {
    if (device < 0 || rt.get_device(&previous_) != cudaSuccess || previous_ == device) return;
    if (const cudaError_t status = rt.set_device(device); status != cudaSuccess)
      cuda_failed(rt, status, fmt::format("cudaSetDevice({}) before {}", device, purpose));
    switched_ = true;
  }
  ~DeviceScope() {
    if (switched_) rt_.set_device(previous_);
  }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  const Runtime& rt_;
  int previous_ = -1;
  bool switched_ = false;
};

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
  const DeviceScope scope(rt, device, "waiting for the array's stream");
  if (const cudaError_t status = rt.stream_synchronize(stream_of(stream)); status != cudaSuccess)
    cuda_failed(rt, status, fmt::format("cudaStreamSynchronize on the array's stream {:#x} (device {})", stream,
                                        device));
}

void stream_wait(std::uintptr_t waiter, std::uintptr_t producer, int device) {
  if (waiter == producer || device_count() == 0) return;
  const Runtime& rt = loaded().runtime;
  const DeviceScope scope(rt, device, "ordering the call's stream after the array's");
  cudaEvent_t event = nullptr;
  if (const cudaError_t status = rt.event_create_with_flags(&event, cudaEventDisableTiming); status != cudaSuccess)
    cuda_failed(rt, status, fmt::format("cudaEventCreateWithFlags (device {})", device));
  const cudaError_t recorded = rt.event_record(event, stream_of(producer));
  const cudaError_t waited = recorded == cudaSuccess ? rt.stream_wait_event(stream_of(waiter), event, 0) : recorded;
  // An event may be destroyed while waits on it are queued: CUDA frees it
  // once they are done.
  rt.event_destroy(event);
  if (recorded != cudaSuccess)
    cuda_failed(rt, recorded, fmt::format("cudaEventRecord on the array's stream {:#x} (device {})", producer, device));
  if (waited != cudaSuccess)
    cuda_failed(rt, waited, fmt::format("cudaStreamWaitEvent of the call's stream {:#x} on the array's stream {:#x} "
                                        "(device {})",
                                        waiter, producer, device));
}

#else

std::string runtime_problem() { return ""; }
int device_count() { return 0; }
int device_of(const void*) { return -1; }
void synchronize(std::uintptr_t, int) {}
void stream_wait(std::uintptr_t, std::uintptr_t, int) {}

#endif

}  // namespace strata_py::cuda
