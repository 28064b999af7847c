// What stream capture forbids (capture.hpp): each check returns CUDA's
// error, reports the misuse naming the call, the capture and the rule, and
// invalidates the captures concerned where CUDA does.
#include <fmt/format.h>

#include "capture_state.hpp"
#include "devices.hpp"
#include "report.hpp"

namespace gpu_double {
namespace {

using namespace capture_detail;

bool blocking(const Stream& s) { return s.kind() == StreamKind::blocking || s.kind() == StreamKind::per_thread; }

// Captures whose blocking streams make the legacy stream of `device` unusable.
std::vector<std::shared_ptr<Capture>> blocking_captures(Captures& all, int device, std::string* streams) {
  std::vector<std::shared_ptr<Capture>> found;
  for (const auto& c : all.ongoing)
    for (const auto& [s, point] : c->members)
      if (s->device() == device && blocking(*s)) {
        if (found.empty() || found.back() != c) found.push_back(c);
        *streams += (streams->empty() ? "" : ", ") + s->name();
      }
  return found;
}

}  // namespace

cudaError_t isolation(const char* call, Stream& stream, const std::string& event) {
  return refuse_in_capture(call, stream, cudaErrorStreamCaptureIsolation,
                           fmt::format("it waits for {}, recorded outside the capture: a captured graph cannot "
                                       "depend on uncaptured work (cudaEventWaitExternal makes it an external wait)",
                                       event));
}

cudaError_t refuse_in_capture(const char* call, Stream& stream, cudaError_t code, const std::string& what) {
  Captures& all = captures();
  std::lock_guard lock(all.mutex);
  const auto it = all.by_stream.find(&stream);
  if (it == all.by_stream.end()) return refuse(call, code, fmt::format("{}: {}", stream.name(), what));
  it->second->invalidated = true;
  return refuse(call, code,
                fmt::format("{}, in {}: {}; the capture is invalidated", stream.name(), it->second->describe(), what));
}

cudaError_t check_stream_wait(const char* call, Stream& stream) {
  {
    Captures& all = captures();
    std::lock_guard lock(all.mutex);
    if (const auto it = all.by_stream.find(&stream); it != all.by_stream.end()) {
      it->second->invalidated = true;
      return refuse(call, cudaErrorStreamCaptureUnsupported,
                    fmt::format("{} is capturing ({}): its captured work runs only when the graph is launched, so "
                                "it cannot be synchronised or queried; the capture is invalidated",
                                stream.name(), it->second->describe()));
    }
  }
  if (const cudaError_t e = check_unsafe(call)) return e;
  return check_legacy(call, stream);
}

cudaError_t check_device_wait(const char* call, int device) {
  {
    Captures& all = captures();
    std::lock_guard lock(all.mutex);
    std::vector<std::shared_ptr<Capture>> found;
    std::string streams;
    for (const auto& c : all.ongoing)
      for (const auto& [s, point] : c->members)
        if (s->device() == device) {
          if (found.empty() || found.back() != c) found.push_back(c);
          streams += (streams.empty() ? "" : ", ") + s->name();
        }
    if (!found.empty()) {
      invalidate(found);
      return refuse(call, cudaErrorStreamCaptureUnsupported,
                    fmt::format("device {} cannot be synchronised while streams of it capture ({}: {}): the "
                                "device encompasses the capture; invalidated",
                                device, streams, describe_all(found)));
    }
  }
  return check_unsafe(call);
}

cudaError_t check_unsafe(const char* call) {
  const cudaStreamCaptureMode mode = thread_mode();
  if (mode == cudaStreamCaptureModeRelaxed) return cudaSuccess;
  const pid_t self = thread_id();
  Captures& all = captures();
  std::lock_guard lock(all.mutex);
  std::vector<std::shared_ptr<Capture>> own, others;
  for (const auto& c : all.ongoing) {
    if (c->thread == self && c->mode != cudaStreamCaptureModeRelaxed) own.push_back(c);
    else if (mode == cudaStreamCaptureModeGlobal && c->thread != self && c->mode == cudaStreamCaptureModeGlobal)
      others.push_back(c);
  }
  if (own.empty() && others.empty()) return cudaSuccess;
  std::string why;
  if (!own.empty())
    why = fmt::format("this thread ({}) has {} ongoing, not begun in relaxed mode", this_thread_name(),
                      describe_all(own));
  if (!others.empty())
    why += fmt::format("{}this thread's ({}) interaction mode is global and another thread has {} ongoing",
                       why.empty() ? "" : "; and ", this_thread_name(), describe_all(others));
  invalidate(own);
  invalidate(others);
  return refuse(call, cudaErrorStreamCaptureUnsupported,
                fmt::format("{} is potentially unsafe during stream capture and CUDA's interaction-mode rule "
                            "prohibits it here: {} (a thread whose mode is relaxed may make it, and one whose mode "
                            "is thread-local may during other threads' captures: "
                            "cudaThreadExchangeStreamCaptureMode); invalidated",
                            call, why));
}

cudaError_t check_legacy(const char* call, Stream& stream, bool invalidate_them) {
  if (stream.kind() != StreamKind::legacy) return cudaSuccess;
  Captures& all = captures();
  std::lock_guard lock(all.mutex);
  std::string streams;
  const auto found = blocking_captures(all, stream.device(), &streams);
  if (found.empty()) return cudaSuccess;
  if (invalidate_them) invalidate(found);
  return refuse(call, cudaErrorStreamCaptureImplicit,
                fmt::format("the legacy default stream of device {} is used while blocking stream(s) of that "
                            "device capture ({}: {}): the legacy stream would depend on captured work (use a "
                            "non-blocking stream){}",
                            stream.device(), streams, describe_all(found),
                            invalidate_them ? "; invalidated" : ""));
}

cudaError_t captured_event(const char* call, const Mark& mark) {
  return refuse(call, cudaErrorCapturedEvent,
                fmt::format("the event was last recorded in {}: it marks a point of a graph, not of a stream, so "
                            "it cannot be queried, synchronised with or timed",
                            mark.capture->describe()));
}

}  // namespace gpu_double
