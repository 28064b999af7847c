// Runtime entry points: allocation, copies and sets.
//
// A synchronous cudaMemcpy from pageable host memory to the device returns
// before the data lands, as CUDA may: the source is staged (copied into
// the double's own memory) at the call, so the caller may reuse its
// buffer, and the device write is an operation on the legacy default
// stream, with its seeded delay. Whatever reads that memory must be
// ordered after the legacy stream (a blocking stream, an event recorded on
// it, a synchronous copy back); the other synchronous copies and sets
// return when done.
//
// Stricter than CUDA on purpose, where strata's correctness would otherwise
// rest on an implementation detail:
//   - cudaFree and cudaFreeHost of memory that queued work still uses is a
//     violation (CUDA happens to synchronise the device in cudaFree; code
//     that relies on it breaks under stream-ordered allocators and MPS);
//   - cudaMemcpyAsync with pageable host memory is a violation (CUDA makes
//     such a copy synchronous: it drains the stream, and a host buffer that
//     goes away before the copy really ran is a race the moment the copy is
//     asynchronous). The copy still happens, with CUDA's pageable semantics.
#include <fmt/format.h>

#include <cstring>
#include <memory>
#include <vector>

#include "call.hpp"
#include "capture.hpp"
#include "faults.hpp"
#include "memory.hpp"

using namespace gpu_double;

namespace {

const char* kind_name(cudaMemcpyKind kind) {
  switch (kind) {
    case cudaMemcpyHostToHost: return "host to host";
    case cudaMemcpyHostToDevice: return "host to device";
    case cudaMemcpyDeviceToHost: return "device to host";
    case cudaMemcpyDeviceToDevice: return "device to device";
    case cudaMemcpyDefault: return "default";
  }
  return "?";
}

bool is_device(const void* p) {
  const Allocation a = find(p);
  return a.base && a.space == Space::device;
}

// One side of a copy, checked at the call; `device` is set for device memory.
struct Side {
  const void* at = nullptr;
  bool device = false;
  bool pinned = false;
};

// Resolves the sides of a copy of `kind`; false after a violation.
bool resolve(Call& call, cudaMemcpyKind kind, const void* dst, const void* src, std::size_t bytes, Side* d, Side* s) {
  d->at = dst, s->at = src;
  if (kind == cudaMemcpyDefault) {
    d->device = is_device(dst);
    s->device = is_device(src);
  } else {
    d->device = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
    s->device = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;
  }
  bool ok = true;
  for (auto [side, what] : {std::pair{d, "dst"}, std::pair{s, "src"}}) {
    if (bytes == 0) continue;
    if (side->device) {
      ok = device_bytes(call.name(), what, side->at, bytes, -1) != nullptr && ok;
    } else {
      bool fine = true;
      side->pinned = host_is_pinned(call.name(), what, side->at, bytes, &fine);
      ok = ok && fine;
    }
  }
  return ok;
}

// Device side: the shadow at execution time (memory may have been freed since).
std::byte* bytes_at(const char* label, const char* what, const Side& side, std::size_t bytes, int device) {
  if (!side.device) {
    if (side.pinned && find(side.at).freed) {
      violation(label, fmt::format("{} = {}: the pinned memory was freed before the copy ran", what, side.at));
      return nullptr;
    }
    return static_cast<std::byte*>(const_cast<void*>(side.at));
  }
  std::byte* p = device_bytes(label, what, side.at, bytes, -1);
  if (!p) fail_device(device, cudaErrorIllegalAddress);
  return p;
}

Op copy_op(std::string label, const Side& d, const Side& s, std::size_t bytes, int device,
           std::shared_ptr<std::vector<std::byte>> snapshot = nullptr) {
  Op op;
  op.label = label;
  if (d.device || d.pinned) op.uses.push_back(range_of(d.at, bytes));
  if (s.device || s.pinned) op.uses.push_back(range_of(s.at, bytes));
  op.run = [=] {
    if (bytes == 0) return;
    std::byte* to = bytes_at(label.c_str(), "dst", d, bytes, device);
    const std::byte* from = snapshot ? snapshot->data() : bytes_at(label.c_str(), "src", s, bytes, device);
    if (to && from) std::memmove(to, from, bytes);
  };
  return op;
}

// Memory that queued work still uses may not be freed: report each user,
// then wait for it as CUDA's implicit synchronisation would.
void check_unused(const char* call, const void* p) {
  const Allocation a = find(p);
  if (!a.base) return;
  const Range r{a.base, a.base + a.size};
  for (Stream* s : all_streams()) {
    std::uint64_t seq = 0;
    std::string label;
    if (!s->pending_use(r, &seq, &label)) continue;
    violation(call, fmt::format("{} is still used by '{}' queued on {}: wait for that work (an event or a stream "
                                "synchronisation) before freeing",
                                a.describe(), label, s->name()));
    wait_until([&] { return s->reached(seq); }, call, [&] { return s->name() + " to finish " + label; });
  }
}

cudaError_t copy(Call& call, void* dst, const void* src, std::size_t bytes, cudaMemcpyKind kind, cudaStream_t handle,
                 bool async) {
  cudaError_t sticky = cudaSuccess;
  if (call.failed(&sticky)) return call.error(sticky);
  if (!async)
    if (const cudaError_t e = check_unsafe(call.name())) return e;
  Side d, s;
  if (!resolve(call, kind, dst, src, bytes, &d, &s)) return call.error(cudaErrorInvalidValue);
  Stream* stream = stream_of(call.name(), async ? handle : nullptr);
  if (!call.stream_usable(stream)) return call.error(cudaErrorInvalidResourceHandle);
  if (const cudaError_t e = check_legacy(call.name(), *stream)) return e;
  const bool pageable_source = !s.device && !s.pinned, pageable_target = !d.device && !d.pinned;
  if (async && bytes > 0 && (pageable_source || pageable_target) && (d.device || s.device)) {
    const void* at = pageable_source ? src : static_cast<const void*>(dst);
    const char* which = pageable_source ? "src" : "dst";
    if (capturing(*stream))
      return refuse_in_capture(call.name(), *stream, cudaErrorStreamCaptureUnsupported,
                               fmt::format("{} = {} is pageable host memory, which a captured copy cannot use (the "
                                           "graph would read or write it at every launch; use pinned memory)",
                                           which, at));
    violation(call.name(), fmt::format("{} = {} is pageable host memory: CUDA makes this copy synchronous (it "
                                       "drains the stream first), and nothing keeps the buffer alive until an "
                                       "asynchronous copy would run; use pinned memory (cudaHostAlloc)",
                                       which, at));
  }
  const std::string label = fmt::format("{} {}, {} bytes", call.name(), kind_name(kind), bytes);
  // Pageable sources are staged now, after the stream drained, as CUDA
  // does before it returns; a synchronous upload then lands later.
  const bool staged_upload = !async && pageable_source && d.device && bytes > 0;
  std::shared_ptr<std::vector<std::byte>> snapshot;
  if ((async && pageable_source && bytes > 0) || staged_upload) {
    wait_until([&] { return stream->idle(); }, call.name(), [&] { return stream->name() + " to drain"; });
    snapshot = std::make_shared<std::vector<std::byte>>(static_cast<const std::byte*>(src),
                                                        static_cast<const std::byte*>(src) + bytes);
  }
  std::uint64_t seq = 0;
  if (const cudaError_t e = enqueue(call.name(), *stream, copy_op(label, d, s, bytes, stream->device(), snapshot), &seq))
    return e;
  if (seq && ((!async && !staged_upload) || pageable_target))
    wait_until([&] { return stream->reached(seq); }, call.name(), [&] { return stream->name() + " to finish " + label; });
  if (call.failed(&sticky)) return call.error(sticky);
  return cudaSuccess;
}

cudaError_t set(Call& call, void* p, int value, std::size_t bytes, cudaStream_t handle, bool async) {
  cudaError_t sticky = cudaSuccess;
  if (call.failed(&sticky)) return call.error(sticky);
  if (!async)
    if (const cudaError_t e = check_unsafe(call.name())) return e;
  if (bytes > 0 && !device_bytes(call.name(), "devPtr", p, bytes, -1)) return call.error(cudaErrorInvalidValue);
  Stream* stream = stream_of(call.name(), async ? handle : nullptr);
  if (!call.stream_usable(stream)) return call.error(cudaErrorInvalidResourceHandle);
  Op op;
  op.label = fmt::format("{} {} bytes", call.name(), bytes);
  op.uses = {range_of(p, bytes)};
  const int device = stream->device();
  op.run = [p, value, bytes, device, label = op.label] {
    if (bytes == 0) return;
    if (std::byte* at = device_bytes(label.c_str(), "devPtr", p, bytes, -1)) std::memset(at, value, bytes);
    else fail_device(device, cudaErrorIllegalAddress);
  };
  std::uint64_t seq = 0;
  if (const cudaError_t e = enqueue(call.name(), *stream, std::move(op), &seq)) return e;
  if (!async && seq) wait_until([&] { return stream->reached(seq); }, call.name(), [&] { return stream->name() + " to finish a memset"; });
  return cudaSuccess;
}

// cudaFree and cudaFreeHost: nullptr is a no-op; otherwise the
// interaction-mode rule, then queued work still using `p` reported and
// waited for, then `p` released from `space` (a misuse when release()
// refuses it).
cudaError_t free_in(Call& call, void* p, Space space) {
  if (!p) return cudaSuccess;
  if (const cudaError_t e = check_unsafe(call.name())) return e;
  check_unused(call.name(), p);
  if (const std::string why = release(p, space); !why.empty()) return call.misuse(cudaErrorInvalidValue, why);
  return cudaSuccess;
}

cudaError_t host_alloc(Call& call, void** p, std::size_t bytes, unsigned flags) {
  if (!p) return call.misuse(cudaErrorInvalidValue, "the result pointer is null");
  *p = nullptr;
  if (device_count() == 0) return call.error(cudaErrorNoDevice);
  constexpr unsigned kKnown = cudaHostAllocPortable | cudaHostAllocMapped | cudaHostAllocWriteCombined;
  if (flags & ~kKnown) return call.misuse(cudaErrorInvalidValue, fmt::format("flags {:#x} are not cudaHostAlloc's", flags));
  if (const cudaError_t e = check_unsafe(call.name())) return e;
  if (fault_now(Fault::host_alloc)) return call.error(cudaErrorMemoryAllocation);
  *p = allocate(Space::pinned, -1, bytes);
  return *p ? cudaSuccess : call.error(cudaErrorMemoryAllocation);
}

}  // namespace

extern "C" {

cudaError_t cudaMalloc(void** p, size_t bytes) {
  Call call("cudaMalloc");
  cudaError_t sticky = cudaSuccess;
  if (call.failed(&sticky)) return call.error(sticky);
  if (const cudaError_t e = check_unsafe(call.name())) return e;
  const int device = current_device();
  if (device_count() == 0) return call.error(cudaErrorNoDevice);
  if (fault_now(Fault::malloc)) return *p = nullptr, call.error(cudaErrorMemoryAllocation);
  *p = allocate(Space::device, device, bytes);
  return *p ? cudaSuccess : call.error(cudaErrorMemoryAllocation);
}

cudaError_t cudaFree(void* p) {
  Call call("cudaFree");
  return free_in(call, p, Space::device);
}

cudaError_t cudaHostAlloc(void** p, size_t bytes, unsigned int flags) {
  Call call("cudaHostAlloc");
  return host_alloc(call, p, bytes, flags);
}

cudaError_t cudaMallocHost(void** p, size_t bytes) {
  Call call("cudaMallocHost");
  return host_alloc(call, p, bytes, cudaHostAllocDefault);
}

// Under unified addressing (every device the double simulates) pinned
// memory is mapped whatever its flags say, and the device pointer is the
// host pointer: cudaHostAllocMapped memory is how strata's gate kernel
// reads a word the host writes.
cudaError_t cudaHostGetDevicePointer(void** device, void* host, unsigned int flags) {
  Call call("cudaHostGetDevicePointer");
  if (!device) return call.misuse(cudaErrorInvalidValue, "pDevice is null");
  *device = nullptr;
  if (flags != 0) return call.misuse(cudaErrorInvalidValue, fmt::format("flags = {} (must be 0)", flags));
  const Allocation a = find(host);
  if (!a.base || a.space != Space::pinned || a.freed)
    return call.misuse(cudaErrorInvalidValue,
                       fmt::format("pHost = {} is not live pinned host memory ({})", host,
                                   a.base ? a.describe() : std::string("never allocated by cudaHostAlloc")));
  *device = host;
  return cudaSuccess;
}

cudaError_t cudaFreeHost(void* p) {
  Call call("cudaFreeHost");
  return free_in(call, p, Space::pinned);
}

cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind) {
  Call call("cudaMemcpy");
  return copy(call, dst, src, bytes, kind, nullptr, false);
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, cudaStream_t stream) {
  Call call("cudaMemcpyAsync");
  return copy(call, dst, src, bytes, kind, stream, true);
}

cudaError_t cudaMemcpyPeerAsync(void* dst, int dst_device, const void* src, int src_device, size_t bytes,
                                cudaStream_t stream) {
  Call call("cudaMemcpyPeerAsync");
  if (bytes > 0 && (!device_bytes(call.name(), "dst", dst, bytes, dst_device) ||
                    !device_bytes(call.name(), "src", src, bytes, src_device)))
    return call.error(cudaErrorInvalidValue);
  return copy(call, dst, src, bytes, cudaMemcpyDeviceToDevice, stream, true);
}

cudaError_t cudaMemset(void* p, int value, size_t bytes) {
  Call call("cudaMemset");
  return set(call, p, value, bytes, nullptr, false);
}

cudaError_t cudaMemsetAsync(void* p, int value, size_t bytes, cudaStream_t stream) {
  Call call("cudaMemsetAsync");
  return set(call, p, value, bytes, stream, true);
}

cudaError_t cudaPointerGetAttributes(cudaPointerAttributes* attributes, const void* p) {
  Call call("cudaPointerGetAttributes");
  std::memset(attributes, 0, sizeof *attributes);
  const Allocation a = find(p);
  attributes->device = -2;
  if (!a.base || a.freed) {
    attributes->type = cudaMemoryTypeUnregistered;
    return cudaSuccess;
  }
  if (a.space == Space::device) {
    attributes->type = cudaMemoryTypeDevice;
    attributes->device = a.device;
    attributes->devicePointer = const_cast<void*>(p);
  } else {
    attributes->type = cudaMemoryTypeHost;
    attributes->hostPointer = const_cast<void*>(p);
    attributes->devicePointer = const_cast<void*>(p);
  }
  return cudaSuccess;
}

}  // extern "C"
