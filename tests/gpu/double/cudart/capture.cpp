#include "capture.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <set>

#include "devices.hpp"
#include "graph.hpp"
#include "report.hpp"

namespace gpu_double {

struct Capture {
  std::uint64_t id = 0;
  Stream* origin = nullptr;
  cudaStreamCaptureMode mode = cudaStreamCaptureModeGlobal;
  pid_t thread = 0;  // the thread that began it
  bool invalidated = false;
  bool ended = false;
  Graph* graph = nullptr;  // filled while it lasts; handed out or discarded at its end
  // Every stream taking part (the origin and the streams that joined),
  // with its point: the nodes its next node depends on.
  std::map<Stream*, std::vector<std::size_t>> members;

  std::string describe() const;
};

namespace {

struct Captures {
  std::mutex mutex;
  std::map<Stream*, std::shared_ptr<Capture>> by_stream;  // streams taking part in an ongoing capture
  std::vector<std::shared_ptr<Capture>> ongoing;
  std::uint64_t made = 0;
};

Captures& captures() {
  static Captures& c = *new Captures;  // never destroyed: stream workers may outlive static destructors
  return c;
}

thread_local cudaStreamCaptureMode thread_mode = cudaStreamCaptureModeGlobal;

const char* mode_name(cudaStreamCaptureMode mode) {
  switch (mode) {
    case cudaStreamCaptureModeGlobal: return "global";
    case cudaStreamCaptureModeThreadLocal: return "thread-local";
    case cudaStreamCaptureModeRelaxed: return "relaxed";
  }
  return "?";
}

pid_t me() { return ::gettid(); }

cudaError_t refuse(const char* call, cudaError_t code, const std::string& what) {
  violation(call, what);
  set_last_error(code);
  return code;
}

cudaError_t quietly(cudaError_t code) {
  set_last_error(code);
  return code;
}

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

std::string describe_all(const std::vector<std::shared_ptr<Capture>>& list) {
  std::string text;
  for (const auto& c : list) text += (text.empty() ? "" : "; ") + c->describe();
  return text;
}

void invalidate(const std::vector<std::shared_ptr<Capture>>& list) {
  for (const auto& c : list) c->invalidated = true;
}

// Adds a node to `c` after the points of `streams`; it becomes their point.
void add_node(Capture& c, const std::vector<Stream*>& streams, const std::string& label, Maker make) {
  Node node;
  node.label = label;
  node.stream = streams.front()->name();
  node.make = std::move(make);
  for (Stream* s : streams)
    for (std::size_t d : c.members[s]) node.deps.push_back(d);
  std::sort(node.deps.begin(), node.deps.end());
  node.deps.erase(std::unique(node.deps.begin(), node.deps.end()), node.deps.end());
  const std::size_t index = c.graph->nodes.size();
  c.graph->nodes.push_back(std::move(node));
  for (Stream* s : streams) c.members[s] = {index};
  trace(fmt::format("{}: captured node {} ({}) into capture #{}", streams.front()->name(), index, label, c.id));
}

// Ends `c`: its streams leave capture.
void finish(Captures& all, const std::shared_ptr<Capture>& c) {
  c->ended = true;
  for (const auto& [s, point] : c->members) all.by_stream.erase(s);
  all.ongoing.erase(std::remove(all.ongoing.begin(), all.ongoing.end(), c), all.ongoing.end());
}

}  // namespace

std::string Capture::describe() const {
  return fmt::format("capture #{} ({} mode, begun on {} by thread {})", id, mode_name(mode), origin->name(), thread);
}

std::string this_thread_name() { return fmt::format("thread {}", me()); }

cudaError_t enqueue(const char* call, Stream& stream, Op op, std::uint64_t* seq) {
  if (seq) *seq = 0;
  {
    Captures& all = captures();
    std::lock_guard lock(all.mutex);
    if (const auto it = all.by_stream.find(&stream); it != all.by_stream.end()) {
      Capture& c = *it->second;
      if (c.invalidated) return quietly(cudaErrorStreamCaptureInvalidated);
      op.after.clear();  // waits inside a capture are edges between its nodes
      const std::string label = op.label;
      add_node(c, {&stream}, label, [op = std::move(op)] { return op; });
      return cudaSuccess;
    }
  }
  if (const cudaError_t e = check_legacy(call, stream)) return e;
  const std::uint64_t n = submit(stream, std::move(op));
  if (seq) *seq = n;
  return cudaSuccess;
}

cudaError_t record_node(const char* call, const std::vector<Stream*>& streams, const std::string& label, Maker make) {
  Captures& all = captures();
  std::lock_guard lock(all.mutex);
  std::shared_ptr<Capture> c;
  for (Stream* s : streams) {
    const auto it = all.by_stream.find(s);
    if (it == all.by_stream.end())
      return refuse(call, cudaErrorStreamCaptureIsolation,
                    fmt::format("{} is not capturing, but other work of the same call is: a capture cannot "
                                "depend on work outside it",
                                s->name()));
    if (c && it->second != c) {
      c->invalidated = it->second->invalidated = true;
      return refuse(call, cudaErrorStreamCaptureMerge,
                    fmt::format("one call's work spans {} and {}: CUDA does not merge two captures; both are "
                                "invalidated",
                                c->describe(), it->second->describe()));
    }
    c = it->second;
  }
  if (c->invalidated) return quietly(cudaErrorStreamCaptureInvalidated);
  add_node(*c, streams, label, std::move(make));
  return cudaSuccess;
}

bool capturing(Stream& stream) {
  Captures& all = captures();
  std::lock_guard lock(all.mutex);
  return all.by_stream.count(&stream) > 0;
}

cudaError_t capture_mark(const char*, Stream& stream, Mark* mark) {
  *mark = {};
  Captures& all = captures();
  std::lock_guard lock(all.mutex);
  const auto it = all.by_stream.find(&stream);
  if (it == all.by_stream.end()) return cudaSuccess;
  if (it->second->invalidated) return quietly(cudaErrorStreamCaptureInvalidated);
  mark->capture = it->second;
  mark->tips = it->second->members[&stream];
  return cudaSuccess;
}

cudaError_t join(const char* call, Stream& stream, const Mark& mark) {
  Captures& all = captures();
  std::lock_guard lock(all.mutex);
  const std::shared_ptr<Capture>& c = mark.capture;
  if (c->ended)
    return refuse(call, cudaErrorCapturedEvent,
                  fmt::format("{} waits for an event last recorded in {}, which has ended: that event marks a point "
                              "of a graph, not of any stream (record it again outside capture)",
                              stream.name(), c->describe()));
  if (c->invalidated) return quietly(cudaErrorStreamCaptureInvalidated);
  if (const auto it = all.by_stream.find(&stream); it != all.by_stream.end()) {
    if (it->second != c) {
      c->invalidated = it->second->invalidated = true;
      return refuse(call, cudaErrorStreamCaptureMerge,
                    fmt::format("{}, in {}, waits for an event recorded in {}: CUDA does not merge two captures; "
                                "both are invalidated",
                                stream.name(), it->second->describe(), c->describe()));
    }
    std::vector<std::size_t>& point = c->members[&stream];
    point.insert(point.end(), mark.tips.begin(), mark.tips.end());
    std::sort(point.begin(), point.end());
    point.erase(std::unique(point.begin(), point.end()), point.end());
    return cudaSuccess;
  }
  if (stream.kind() == StreamKind::legacy) {
    c->invalidated = true;
    return refuse(call, cudaErrorStreamCaptureUnsupported,
                  fmt::format("the legacy default stream waits for an event recorded in {}: the legacy stream "
                              "cannot take part in a capture; the capture is invalidated",
                              c->describe()));
  }
  // The stream joins: its later work is captured after the event's point.
  c->members[&stream] = mark.tips;
  all.by_stream[&stream] = c;
  trace(fmt::format("{} joins capture #{}", stream.name(), c->id));
  return cudaSuccess;
}

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
  const cudaStreamCaptureMode mode = thread_mode;
  if (mode == cudaStreamCaptureModeRelaxed) return cudaSuccess;
  const pid_t self = me();
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

cudaStreamCaptureMode exchange_mode(cudaStreamCaptureMode mode) {
  std::swap(mode, thread_mode);
  return mode;
}

cudaError_t begin_capture(const char* call, Stream& stream, cudaStreamCaptureMode mode) {
  if (mode != cudaStreamCaptureModeGlobal && mode != cudaStreamCaptureModeThreadLocal &&
      mode != cudaStreamCaptureModeRelaxed)
    return refuse(call, cudaErrorInvalidValue, fmt::format("capture mode {} does not exist", int(mode)));
  if (stream.kind() == StreamKind::legacy)
    return refuse(call, cudaErrorStreamCaptureUnsupported,
                  "capture cannot begin on the legacy default stream (use a stream of your own)");
  Captures& all = captures();
  std::lock_guard lock(all.mutex);
  if (const auto it = all.by_stream.find(&stream); it != all.by_stream.end())
    return refuse(call, cudaErrorIllegalState,
                  fmt::format("{} already takes part in {}", stream.name(), it->second->describe()));
  auto c = std::make_shared<Capture>();
  c->id = ++all.made;
  c->origin = &stream;
  c->mode = mode;
  c->thread = me();
  c->graph = new_graph(c->id);
  c->members[&stream] = {};
  all.by_stream[&stream] = c;
  all.ongoing.push_back(c);
  trace(fmt::format("{}: begins {}", stream.name(), c->describe()));
  return cudaSuccess;
}

cudaError_t end_capture(const char* call, Stream& stream, Graph** graph) {
  *graph = nullptr;
  Captures& all = captures();
  std::lock_guard lock(all.mutex);
  const auto it = all.by_stream.find(&stream);
  if (it == all.by_stream.end())
    return refuse(call, cudaErrorIllegalState, fmt::format("{} is not capturing", stream.name()));
  const std::shared_ptr<Capture> c = it->second;
  if (c->origin != &stream) {
    c->invalidated = true;
    return refuse(call, cudaErrorStreamCaptureUnmatched,
                  fmt::format("{} joined {} but did not begin it: end it on {}; invalidated", stream.name(),
                              c->describe(), c->origin->name()));
  }
  if (c->mode != cudaStreamCaptureModeRelaxed && c->thread != me())
    return refuse(call, cudaErrorStreamCaptureWrongThread,
                  fmt::format("{} is ended by {}: a capture not begun in relaxed mode must end on the thread that "
                              "began it",
                              c->describe(), this_thread_name()));
  finish(all, c);
  if (c->invalidated) {
    discard(c->graph);
    return quietly(cudaErrorStreamCaptureInvalidated);
  }
  // Every node must precede the origin's point: work of a joined stream
  // that the origin never waited for is a fork left open.
  std::vector<bool> joined(c->graph->nodes.size(), false);
  std::vector<std::size_t> todo = c->members[&stream];
  while (!todo.empty()) {
    const std::size_t n = todo.back();
    todo.pop_back();
    if (joined[n]) continue;
    joined[n] = true;
    for (std::size_t d : c->graph->nodes[n].deps) todo.push_back(d);
  }
  for (std::size_t n = joined.size(); n-- > 0;)
    if (!joined[n]) {
      const Node& open = c->graph->nodes[n];
      const std::string what = fmt::format(
          "{}: '{}', captured on {}, is not joined back into {} (record an event on {} after it and make {} wait "
          "for it before cudaStreamEndCapture)",
          c->describe(), open.label, open.stream, stream.name(), open.stream, stream.name());
      discard(c->graph);
      return refuse(call, cudaErrorStreamCaptureUnjoined, what);
    }
  *graph = c->graph;
  trace(fmt::format("{}: ends capture #{} with {} node(s)", stream.name(), c->id, c->graph->nodes.size()));
  return cudaSuccess;
}

cudaError_t capture_status(const char* call, Stream& stream, cudaStreamCaptureStatus* status, unsigned long long* id,
                           Graph** graph, std::vector<std::size_t>* tips) {
  if (const cudaError_t e = check_legacy(call, stream, false)) return e;
  Captures& all = captures();
  std::lock_guard lock(all.mutex);
  *status = cudaStreamCaptureStatusNone;
  const auto it = all.by_stream.find(&stream);
  if (it == all.by_stream.end()) return cudaSuccess;
  const Capture& c = *it->second;
  *status = c.invalidated ? cudaStreamCaptureStatusInvalidated : cudaStreamCaptureStatusActive;
  if (id) *id = c.id;
  if (graph) *graph = c.graph;
  if (tips) *tips = c.members.at(&stream);
  return cudaSuccess;
}

}  // namespace gpu_double
