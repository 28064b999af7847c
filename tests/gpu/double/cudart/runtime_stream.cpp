// Runtime entry points: streams, events and host functions.
#include <fmt/format.h>

#include <chrono>
#include <mutex>
#include <set>

#include "call.hpp"
#include "capture.hpp"

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

// Host waits and queries of an event: the interaction-mode rule, and an
// event last recorded in a capture marks no point a host can see.
cudaError_t check_recorded_outside(Call& call, EventState* e) {
  if (const cudaError_t c = check_unsafe(call.name())) return c;
  std::unique_lock lock(events().mutex);
  const Mark mark = e->mark;
  lock.unlock();
  return mark.capture ? captured_event(call.name(), mark) : cudaSuccess;
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
  if (capturing(*stream))
    return refuse_in_capture(call.name(), *stream, cudaErrorStreamCaptureUnsupported,
                             "cudaStreamDestroy of a stream taking part in a capture (end the capture first)");
  // Legal with work pending: CUDA finishes it, then releases the stream.
  stream->destroy();
  return cudaSuccess;
}

cudaError_t cudaStreamQuery(cudaStream_t handle) {
  Call call("cudaStreamQuery");
  Stream* stream = stream_of(call.name(), handle);
  if (!call.stream_usable(stream)) return call.error(cudaErrorInvalidResourceHandle);
  if (const cudaError_t e = check_stream_wait(call.name(), *stream)) return e;
  return sticky_or(call, stream->idle() ? cudaSuccess : cudaErrorNotReady);
}

cudaError_t cudaStreamSynchronize(cudaStream_t handle) {
  Call call("cudaStreamSynchronize");
  Stream* stream = stream_of(call.name(), handle);
  if (!call.stream_usable(stream)) return call.error(cudaErrorInvalidResourceHandle);
  if (const cudaError_t e = check_stream_wait(call.name(), *stream)) return e;
  wait_until([&] { return stream->idle(); }, call.name(),
             [&] { return fmt::format("{} to finish (it is at: {})", stream->name(), stream->next_label()); });
  return sticky_or(call, cudaSuccess);
}

cudaError_t cudaStreamWaitEvent(cudaStream_t handle, cudaEvent_t event, unsigned int flags) {
  Call call("cudaStreamWaitEvent");
  Stream* stream = stream_of(call.name(), handle);
  if (!call.stream_usable(stream)) return call.error(cudaErrorInvalidResourceHandle);
  EventState* e = event_of(call, event);
  if (!e) return cudaErrorInvalidResourceHandle;
  if (flags & ~unsigned(cudaEventWaitExternal))
    return call.misuse(cudaErrorInvalidValue, fmt::format("flags {:#x} (cudaEventWaitDefault or cudaEventWaitExternal)", flags));
  Mark mark;
  Point point;
  {
    std::lock_guard lock(events().mutex);
    mark = e->mark;
    point = e->point;
  }
  // An event recorded in a capture: the stream joins it (or merges the point).
  if (mark.capture) return join(call.name(), *stream, mark);
  const std::string label = fmt::format("cudaStreamWaitEvent on {}", point.stream ? point.stream->name() : "nothing");
  if (capturing(*stream)) {
    if (!point.stream) return cudaSuccess;  // never recorded: nothing to wait for
    if (!(flags & cudaEventWaitExternal))
      return isolation(call.name(), *stream, fmt::format("an event last recorded on {}", point.stream->name()));
    // An external wait: every launch waits for the event's record of that time.
    return record_node(call.name(), {stream}, label + " (external)", [e, label] {
      Op op;
      op.label = label + " (external)";
      std::lock_guard lock(events().mutex);
      if (e->point.stream && !e->mark.capture) op.after.push_back(e->point);
      op.run = [] {};
      return op;
    });
  }
  Op op;
  op.label = label;
  if (point.stream) op.after.push_back(point);  // an event never recorded is complete
  op.run = [] {};
  return enqueue(call.name(), *stream, std::move(op));
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
  return enqueue(call.name(), *stream, std::move(op));
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
  Mark mark;
  if (const cudaError_t c = capture_mark(call.name(), *stream, &mark)) return c;
  if (mark.capture) {
    // A point of the capture, not of the stream: nothing is enqueued.
    std::lock_guard lock(events().mutex);
    ++e->generation;
    e->seconds = -1;
    e->mark = std::move(mark);
    return cudaSuccess;
  }
  if (const cudaError_t c = check_legacy(call.name(), *stream)) return c;
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
  const std::uint64_t seq = submit(*stream, std::move(op));
  std::lock_guard lock(events().mutex);
  e->point = {stream, seq};
  e->mark = {};
  return cudaSuccess;
}

cudaError_t cudaEventQuery(cudaEvent_t event) {
  Call call("cudaEventQuery");
  EventState* e = event_of(call, event);
  if (!e) return cudaErrorInvalidResourceHandle;
  if (const cudaError_t c = check_recorded_outside(call, e)) return c;
  // Querying puts nothing on the stream: an event recorded before NCCL work
  // was held for its stream may be queried meanwhile (recording one then is
  // what cudaEventRecord reports).
  return sticky_or(call, e->point.reached() ? cudaSuccess : cudaErrorNotReady);
}

cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  Call call("cudaEventSynchronize");
  EventState* e = event_of(call, event);
  if (!e) return cudaErrorInvalidResourceHandle;
  if (const cudaError_t c = check_recorded_outside(call, e)) return c;
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
  for (EventState* e : {a, b}) {
    std::unique_lock lock(events().mutex);
    const Mark mark = e->mark;
    lock.unlock();
    if (mark.capture) return captured_event(call.name(), mark);
  }
  if (!a->timing || !b->timing)
    return call.misuse(cudaErrorInvalidResourceHandle, "an event created with cudaEventDisableTiming");
  if (!a->point.stream || !b->point.stream) return call.error(cudaErrorInvalidResourceHandle);
  if (!a->point.reached() || !b->point.reached()) return call.error(cudaErrorNotReady);
  std::lock_guard lock(events().mutex);
  *ms = float((b->seconds - a->seconds) * 1e3);
  return cudaSuccess;
}

}  // extern "C"
