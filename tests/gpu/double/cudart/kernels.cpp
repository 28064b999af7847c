#include "kernels.hpp"

#include <cxxabi.h>
#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <regex>
#include <thread>

#include "call.hpp"
#include "capture.hpp"
#include "elementwise.hpp"
#include "memory.hpp"
#include "settings.hpp"

namespace gpu_double {
namespace {

using strata::DataType;
using strata::ReduceOp;

constexpr std::size_t kVectorBytes = 16;

// Kernels known by their whole demangled name (as nvcc 13 registers them).
constexpr const char* kGate = "strata::cuda::gate_kernel(unsigned int const volatile*, unsigned int)";
constexpr const char* kBusy = "strata::bench::busy_kernel(long long)";

// Layout of strata::cuda::PackDesc (lib/gpu_plugin/cuda/kernels.hpp).
struct PackDesc {
  void* ptr;
  std::size_t bytes;
  std::size_t offset;
};
static_assert(sizeof(PackDesc) == 24);

struct Kernels {
  std::mutex mutex;
  std::map<const void*, Kernel> by_stub;
};
Kernels& kernels() {
  static Kernels& k = *new Kernels;
  return k;
}

std::string demangle(const char* name) {
  int status = 0;
  char* text = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  std::string out = status == 0 && text ? text : name;
  std::free(text);
  return out;
}

bool dtype_of(const std::string& type, DataType* dtype) {
  static const std::map<std::string, DataType> types = {
      {"float", DataType::f32},        {"double", DataType::f64},       {"signed char", DataType::i8},
      {"unsigned char", DataType::u8}, {"int", DataType::i32},          {"unsigned int", DataType::u32},
      {"long", DataType::i64},         {"unsigned long", DataType::u64}, {"long long", DataType::i64},
      {"unsigned long long", DataType::u64}};
  const auto it = types.find(type);
  if (it == types.end()) return false;
  *dtype = it->second;
  return true;
}

Kernel decode(const char* device_name) {
  Kernel k;
  k.name = demangle(device_name);
  std::smatch m;
  static const std::regex native_reduce(R"(reduce_kernel<[^<]*NativeOps<([a-z ]+), \(strata::ReduceOp\)(\d)>)");
  static const std::regex half_reduce(R"(reduce_kernel<[^<]*HalfOps<(__half2|__nv_bfloat162), \(strata::ReduceOp\)(\d)>)");
  static const std::regex native_divide(R"(divide_kernel<[^<]*NativeCodec<([a-z ]+)>)");
  static const std::regex half_divide(R"(divide_kernel<[^<]*::(BF16Codec|F16Codec)>)");
  static const std::regex pack(R"(pack_kernel<(true|false)>)");
  if (k.name == kGate) {
    k.family = Family::gate;
  } else if (k.name == kBusy) {
    k.family = Family::busy;
  } else if (std::regex_search(k.name, m, native_reduce) && dtype_of(m[1], &k.dtype)) {
    k.family = Family::reduce;
    k.op = ReduceOp(std::stoi(m[2]));
  } else if (std::regex_search(k.name, m, half_reduce)) {
    k.family = Family::reduce;
    k.dtype = m[1] == "__half2" ? DataType::f16 : DataType::bf16;
    k.op = ReduceOp(std::stoi(m[2]));
  } else if (std::regex_search(k.name, m, native_divide) && dtype_of(m[1], &k.dtype)) {
    k.family = Family::divide;
  } else if (std::regex_search(k.name, m, half_divide)) {
    k.family = Family::divide;
    k.dtype = m[1] == "F16Codec" ? DataType::f16 : DataType::bf16;
  } else if (std::regex_search(k.name, m, pack)) {
    k.family = m[1] == "true" ? Family::pack : Family::unpack;
  }
  return k;
}

template <typename T>
T arg(void** args, int i) {
  T value;
  std::memcpy(&value, args[i], sizeof value);
  return value;
}

bool aligned(const void* p) { return reinterpret_cast<std::uintptr_t>(p) % kVectorBytes == 0; }

// What a launch enqueues: the checks a GPU would fault on, at launch (to
// name the call) and again when it runs (memory may have changed since).
struct Launch {
  const Kernel* kernel;
  std::string label;
  int device;
  std::vector<Range> uses;
};

// dst = a op b, or data /= divisor: the body from `head` in 16-byte vectors
// must be aligned, as the kernel's uint4 loads are.
Op elementwise_op(const Launch& l, void** args, std::string* problem) {
  const std::size_t element = element_bytes(l.kernel->dtype);
  const std::size_t per = kVectorBytes / element;
  const bool reduce = l.kernel->family == Family::reduce;
  std::vector<void*> pointers = reduce ? std::vector<void*>{arg<void*>(args, 0), arg<void*>(args, 1), arg<void*>(args, 2)}
                                       : std::vector<void*>{arg<void*>(args, 0)};
  const int first = reduce ? 3 : 1;
  const auto head = arg<std::size_t>(args, first), vectors = arg<std::size_t>(args, first + 1),
             count = arg<std::size_t>(args, first + 2);
  const std::size_t divisor = reduce ? 0 : arg<std::size_t>(args, 4);
  const std::size_t bytes = count * element;
  static constexpr const char* names[] = {"dst", "a", "b"};
  if (head + vectors * per > count)
    *problem = fmt::format("head {} + {} vectors of {} elements exceed count {}", head, vectors, per, count);
  if (vectors > 0)
    for (std::size_t i = 0; i < pointers.size(); ++i)
      if (!aligned(static_cast<std::byte*>(pointers[i]) + head * element))
        *problem = fmt::format("{} + head ({}) is not 16-byte aligned: the uint4 loads of the vector body fault "
                               "(cudaErrorMisalignedAddress)",
                               reduce ? names[i] : "data", head);
  if (reduce)
    for (int i = 1; i < 3; ++i) {
      const Range d = range_of(pointers[0], bytes), s = range_of(pointers[std::size_t(i)], bytes);
      if (d.overlaps(s) && d.begin != s.begin)
        *problem = fmt::format("dst partially overlaps {} (the kernel allows dst == {} exactly, not an offset)",
                               names[i], names[i]);
    }
  Op op;
  op.label = l.label;
  for (void* p : pointers) op.uses.push_back(range_of(p, bytes));
  const Kernel kernel = *l.kernel;
  const int device = l.device;
  const bool misaligned = problem->find("aligned") != std::string::npos;
  op.run = [=, label = l.label] {
    if (misaligned) return fail_device(device, cudaErrorMisalignedAddress);
    std::vector<std::byte*> at;
    for (std::size_t i = 0; i < pointers.size(); ++i) {
      at.push_back(device_bytes(label.c_str(), reduce ? names[i] : "data", pointers[i], bytes, device));
      if (!at.back()) return fail_device(device, cudaErrorIllegalAddress);
    }
    if (count == 0) return;
    if (kernel.family == Family::reduce)
      combine(at[0], at[1], at[2], count, kernel.dtype, kernel.op, Semantics::strata_kernel);
    else
      divide(at[0], count, kernel.dtype, divisor);
  };
  return op;
}

// The descriptors are read from device memory when the kernel runs: a copy
// of them that has not landed yet is seen as it is (0xCB or old contents).
Op pack_op(const Launch& l, void** args) {
  auto* packed = arg<std::byte*>(args, 0);
  const auto* descs = arg<const PackDesc*>(args, 1);
  const auto n = arg<std::size_t>(args, 2);
  Op op;
  op.label = l.label;
  op.uses = {range_of(descs, n * sizeof(PackDesc)), range_of(packed, 1)};
  const bool pack = l.kernel->family == Family::pack;
  const int device = l.device;
  op.run = [=, label = l.label] {
    const std::byte* table = device_bytes(label.c_str(), "descs", descs, n * sizeof(PackDesc), device);
    if (!table) return fail_device(device, cudaErrorIllegalAddress);
    for (std::size_t i = 0; i < n; ++i) {
      PackDesc d;
      std::memcpy(&d, table + i * sizeof d, sizeof d);
      if (d.bytes == 0) continue;
      const std::string which = fmt::format("descs[{}].ptr", i), in_pack = fmt::format("packed + descs[{}].offset", i);
      std::byte* tensor = device_bytes(label.c_str(), which.c_str(), d.ptr, d.bytes, device);
      std::byte* slot = device_bytes(label.c_str(), in_pack.c_str(), packed + d.offset, d.bytes, device);
      if (!tensor || !slot) return fail_device(device, cudaErrorIllegalAddress);
      if (pack) std::memmove(slot, tensor, d.bytes);
      else std::memmove(tensor, slot, d.bytes);
    }
  };
  return op;
}

// gate_kernel(flag, target): one thread spins until (int)(*flag - target)
// >= 0, reading a word of mapped pinned host memory that a host thread
// writes. The double polls it on the stream's worker; a gate that never
// opens is what a real GPU would hang on.
Op gate_op(const Launch& l, void** args, std::string* problem) {
  const auto* flag = arg<const volatile unsigned*>(args, 0);
  const auto target = arg<unsigned>(args, 1);
  const void* at = const_cast<const unsigned*>(flag);  // for messages
  const Allocation a = find(const_cast<const unsigned*>(flag));
  const auto address = reinterpret_cast<std::uintptr_t>(flag);
  if (!a.base)
    *problem = "is not pinned host memory (a kernel cannot read pageable memory; use cudaHostAlloc with "
               "cudaHostAllocMapped)";
  else if (a.space == Space::device)
    *problem = fmt::format("is device memory ({}), which the host cannot write", a.describe());
  else if (a.freed) *problem = fmt::format("points into freed memory: {}", a.describe());
  else if (address % alignof(unsigned) != 0 || address + sizeof(unsigned) > a.base + a.size)
    *problem = fmt::format("is not an aligned word inside {}", a.describe());
  if (!problem->empty()) *problem = fmt::format("flag = {} {}", at, *problem);
  Op op;
  op.label = fmt::format("{} (flag {}, target {})", l.label, at, target);
  op.uses = {range_of(const_cast<const unsigned*>(flag), sizeof(unsigned))};
  const int device = l.device;
  const bool bad = !problem->empty();
  op.run = [=, label = op.label] {
    if (bad) return fail_device(device, cudaErrorIllegalAddress);
    const auto limit = std::chrono::steady_clock::now() + std::chrono::duration<double>(settings().hang_seconds);
    auto pause = std::chrono::microseconds(1);
    for (;;) {
      const unsigned word = __atomic_load_n(const_cast<const unsigned*>(flag), __ATOMIC_ACQUIRE);
      if (int(word - target) >= 0) return;
      if (find(const_cast<const unsigned*>(flag)).freed) {
        violation(label.c_str(), "the gate's flag word was freed while the gate waited on it");
        return fail_device(device, cudaErrorIllegalAddress);
      }
      if (std::chrono::steady_clock::now() > limit)
        fatal(label.c_str(), fmt::format("the gate never opened: waited {} s (STRATA_FAKE_HANG_SECONDS) for the word "
                                         "at {} to reach {}; it holds {} (a host stage that never released it?)",
                                         settings().hang_seconds, at, target,
                                         word));
      std::this_thread::sleep_for(pause);
      pause = std::min(pause * 2, std::chrono::microseconds(100));
    }
  };
  return op;
}

// busy_kernel(nanoseconds): compute that keeps its stream busy that long.
Op busy_op(const Launch& l, void** args) {
  const auto nanoseconds = arg<long long>(args, 0);
  Op op;
  op.label = fmt::format("{} ({} ns)", l.label, nanoseconds);
  op.run = [nanoseconds] {
    if (nanoseconds > 0) std::this_thread::sleep_for(std::chrono::nanoseconds(nanoseconds));
  };
  return op;
}

}  // namespace

void register_kernel(const void* host_function, const char* device_name) {
  Kernels& k = kernels();
  std::lock_guard lock(k.mutex);
  k.by_stub[host_function] = decode(device_name);
}

const Kernel* kernel_of(const void* host_function) {
  Kernels& k = kernels();
  std::lock_guard lock(k.mutex);
  const auto it = k.by_stub.find(host_function);
  return it == k.by_stub.end() ? nullptr : &it->second;  // map nodes never move
}

cudaError_t launch(const char* name, const Kernel& kernel, dim3 grid, dim3 block, void** args, std::size_t shared,
                   cudaStream_t handle) {
  Call call(name);
  cudaError_t sticky = cudaSuccess;
  if (call.failed(&sticky)) return call.error(sticky);
  if (kernel.family == Family::unknown)
    return call.misuse(cudaErrorInvalidDeviceFunction,
                       fmt::format("{}: the test double has no host version of this kernel", kernel.name));
  const unsigned long threads = (unsigned long)block.x * block.y * block.z;
  if (grid.x == 0 || grid.y == 0 || grid.z == 0 || grid.y > 65535 || grid.z > 65535 || grid.x > 2147483647u ||
      threads == 0 || threads > 1024 || block.z > 64 || shared > 48 * 1024)
    return call.misuse(cudaErrorInvalidConfiguration,
                       fmt::format("{}: grid ({}, {}, {}), block ({}, {}, {}), {} bytes of shared memory", kernel.name,
                                   grid.x, grid.y, grid.z, block.x, block.y, block.z, shared));
  Stream* stream = stream_of(name, handle);
  if (!call.stream_usable(stream)) return call.error(cudaErrorInvalidResourceHandle);
  const int device = current_device();
  if (stream->device() != device)
    return call.misuse(cudaErrorInvalidResourceHandle,
                       fmt::format("{} launched on {} (device {}) while device {} is current: a kernel runs on the "
                                   "current device, so the stream must belong to it",
                                   kernel.name, stream->name(), stream->device(), device));
  Launch l{&kernel, fmt::format("kernel {}", kernel.name), device, {}};
  std::string problem;
  Op op;
  switch (kernel.family) {
    case Family::pack:
    case Family::unpack: op = pack_op(l, args); break;
    case Family::gate: op = gate_op(l, args, &problem); break;
    case Family::busy: op = busy_op(l, args); break;
    default: op = elementwise_op(l, args, &problem); break;
  }
  if (!problem.empty()) violation(name, fmt::format("{}: {}", kernel.name, problem));
  // Pointers that are not device memory of this device would fault on the
  // GPU: name them now, at the launch (the operation fails when it runs).
  if (kernel.family == Family::reduce || kernel.family == Family::divide) {
    const std::size_t count = arg<std::size_t>(args, kernel.family == Family::reduce ? 5 : 3);
    const std::size_t element = element_bytes(kernel.dtype);
    static constexpr const char* names[] = {"dst", "a", "b"};
    for (int i = 0; i < (kernel.family == Family::reduce ? 3 : 1); ++i)
      device_bytes(name, kernel.family == Family::reduce ? names[i] : "data", arg<void*>(args, i), count * element,
                   device);
  } else if (kernel.family == Family::pack || kernel.family == Family::unpack) {
    device_bytes(name, "descs", arg<void*>(args, 1), arg<std::size_t>(args, 2) * sizeof(PackDesc), device);
  }
  return enqueue(name, *stream, std::move(op));
}

}  // namespace gpu_double
