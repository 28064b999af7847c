// Runtime entry points: streams, events and host functions.
#include <fmt/format.h>

#include <chrono>
#include <mutex>
#include <set>

#include "call.hpp"

using namespace gpu_double;

namespace {

struct Events {
  std::mutex mutex;
  std::set<EventState*> made;
};
Events& events() {
  static Events& e = *new Events;
  return e;
}

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The event a handle names, or null after a violation.
EventState* event_of(Call& call, cudaEvent_t handle) {
  auto* e = reinterpret_cast<EventState*>(handle);
  Events& all = events();
  std::lock_guard lock(all.mutex);
  if (!all.made.count(e)) {
    call.misuse(cudaErrorInvalidResourceHandle, fmt::format("event handle {} was not made by cudaEventCreate",
                                                            static_cast<void*>(handle)));
    return nullptr;
  }
  if (e->destroyed) {
    call.misuse(cudaErrorInvalidResourceHandle, fmt::format("event {} was destroyed", static_cast<void*>(handle)));
    return nullptr;
  }
  return e;
}

cudaError_t sticky_or(Call& call, cudaError_t otherwise) {
  cudaError_t sticky = cudaSuccess;
  return call.failed(&sticky) ? call.error(sticky) : otherwise;
}

cudaError_t make_stream(Call& call, cudaStream_t* handle, unsigned flags) {
  const int device = current_device();
  if (device_count() == 0) return call.error(cudaErrorNoDevice);
  static std::atomic<int> made{0};
  const bool non_blocking = flags & cudaStreamNonBlocking;
  auto* stream = new Stream(device, non_blocking ? StreamKind::non_blocking : StreamKind::blocking,
                            fmt::format("{} stream #{} of device {}", non_blocking ? "non-blocking" : "blocking",
                                        ++made, device));
  *handle = handle_of(stream);
  return cudaSuccess;
}

cudaError_t make_event(Call& call, cudaEvent_t* handle, unsigned flags) {
  if (device_count() == 0) return call.error(cudaErrorNoDevice);
  auto* e = new EventState;
  e->device = current_device();
  e->timing = !(flags & cudaEventDisableTiming);
  Events& all = events();
  std::lock_guard lock(all.mutex);
  all.made.insert(e);
  *handle = reinterpret_cast<cudaEvent_t>(e);
  return cudaSuccess;
}

}  // namespace

extern "C" {

cudaError_t cudaStreamCreate(cudaStream_t* stream) {
  Call call("cudaStreamCreate");
  return make_stream(call, stream, cudaStreamDefault);
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned int flags) {
  Call call("cudaStreamCreateWithFlags");
  return make_stream(call, stream, flags);
}

cudaError_t cudaStreamDestroy(cudaStream_t handle) {
  Call call("cudaStreamDestroy");
  if (handle == nullptr || handle == cudaStreamLegacy || handle == cudaStreamPerThread)
    return call.misuse(cudaErrorInvalidResourceHandle, "a default stream cannot be destroyed");
  Stream* stream = stream_of(call.name(), handle);
  if (!stream) return call.error(cudaErrorInvalidResourceHandle);
  // Legal with work pending: CUDA finishes it, then releases the stream.
  stream->destroy();
  return cudaSuccess;
}

cudaError_t cudaStreamQuery(cudaStream_t handle) {
  Call call("cudaStreamQuery");
  Stream* stream = stream_of(call.name(), handle);
  if (!call.stream_usable(stream)) return call.error(cudaErrorInvalidResourceHandle);
  return sticky_or(call, stream->idle() ? cudaSuccess : cudaErrorNotReady);
}

cudaError_t cudaStreamSynchronize(cudaStream_t handle) {
  Call call("cudaStreamSynchronize");
  Stream* stream = stream_of(call.name(), handle);
  if (!call.stream_usable(stream)) return call.error(cudaErrorInvalidResourceHandle);
  wait_until([&] { return stream->idle(); }, call.name(),
             [&] { return fmt::format("{} to finish (it is at: {})", stream->name(), stream->next_label()); });
  return sticky_or(call, cudaSuccess);
}

cudaError_t cudaStreamWaitEvent(cudaStream_t handle, cudaEvent_t event, unsigned int) {
  Call call("cudaStreamWaitEvent");
  Stream* stream = stream_of(call.name(), handle);
  if (!call.stream_usable(stream)) return call.error(cudaErrorInvalidResourceHandle);
  EventState* e = event_of(call, event);
  if (!e) return cudaErrorInvalidResourceHandle;
  Op op;
  op.label = fmt::format("cudaStreamWaitEvent on {}", e->point.stream ? e->point.stream->name() : "nothing");
  if (e->point.stream) op.after.push_back(e->point);  // an event never recorded is complete
  op.run = [] {};
  submit(*stream, std::move(op));
  return cudaSuccess;
}

cudaError_t cudaStreamGetDevice(cudaStream_t handle, int* device) {
  Call call("cudaStreamGetDevice");
  Stream* stream = stream_of(call.name(), handle);
  if (!stream) return call.error(cudaErrorInvalidResourceHandle);
  *device = stream->device();
  return cudaSuccess;
}

cudaError_t cudaLaunchHostFunc(cudaStream_t handle, cudaHostFn_t function, void* data) {
  Call call("cudaLaunchHostFunc");
  Stream* stream = stream_of(call.name(), handle);
  if (!call.stream_usable(stream)) return call.error(cudaErrorInvalidResourceHandle);
  Op op;
  op.label = "host function";
  op.run = [function, data] {
    set_in_host_function(true);
    function(data);
    set_in_host_function(false);
  };
  submit(*stream, std::move(op));
  return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t* event) {
  Call call("cudaEventCreate");
  return make_event(call, event, cudaEventDefault);
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int flags) {
  Call call("cudaEventCreateWithFlags");
  return make_event(call, event, flags);
}

cudaError_t cudaEventDestroy(cudaEvent_t event) {
  Call call("cudaEventDestroy");
  EventState* e = event_of(call, event);
  if (!e) return cudaErrorInvalidResourceHandle;
  std::lock_guard lock(events().mutex);
  e->destroyed = true;  // kept: a pending record may still complete
  return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t handle) {
  Call call("cudaEventRecord");
  EventState* e = event_of(call, event);
  if (!e) return cudaErrorInvalidResourceHandle;
  Stream* stream = stream_of(call.name(), handle);
  if (!call.stream_usable(stream)) return call.error(cudaErrorInvalidResourceHandle);
  if (stream->device() != e->device)
    return call.misuse(cudaErrorInvalidResourceHandle,
                       fmt::format("event of device {} recorded on {} (device {}): they must share a device", e->device,
                                   stream->name(), stream->device()));
  Op op;
  op.label = "event record";
  std::uint64_t generation = 0;
  {
    std::lock_guard lock(events().mutex);
    generation = ++e->generation;
    e->seconds = -1;
  }
  op.run = [e, generation] {
    std::lock_guard lock(events().mutex);
    if (e->generation == generation) e->seconds = now_seconds();
  };
  e->point = {stream, submit(*stream, std::move(op))};
  return cudaSuccess;
}

cudaError_t cudaEventQuery(cudaEvent_t event) {
  Call call("cudaEventQuery");
  EventState* e = event_of(call, event);
  if (!e) return cudaErrorInvalidResourceHandle;
  if (e->point.stream && !call.stream_usable(e->point.stream)) return cudaErrorIllegalState;
  return sticky_or(call, e->point.reached() ? cudaSuccess : cudaErrorNotReady);
}

cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  Call call("cudaEventSynchronize");
  EventState* e = event_of(call, event);
  if (!e) return cudaErrorInvalidResourceHandle;
  const Point point = e->point;
  wait_until([&] { return point.reached(); }, call.name(),
             [&] { return fmt::format("an event on {} (it is at: {})", point.stream->name(), point.stream->next_label()); });
  return sticky_or(call, cudaSuccess);
}

cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  Call call("cudaEventElapsedTime");
  EventState* a = event_of(call, start);
  EventState* b = event_of(call, end);
  if (!a || !b) return cudaErrorInvalidResourceHandle;
  if (!a->timing || !b->timing)
    return call.misuse(cudaErrorInvalidResourceHandle, "an event created with cudaEventDisableTiming");
  if (!a->point.stream || !b->point.stream) return call.error(cudaErrorInvalidResourceHandle);
  if (!a->point.reached() || !b->point.reached()) return call.error(cudaErrorNotReady);
  std::lock_guard lock(events().mutex);
  *ms = float((b->seconds - a->seconds) * 1e3);
  return cudaSuccess;
}

}  // extern "C"
