#include "capture.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>

#include "capture_state.hpp"
#include "devices.hpp"
#include "graph.hpp"
#include "report.hpp"

namespace gpu_double {

namespace {

thread_local cudaStreamCaptureMode mode_of_thread = cudaStreamCaptureModeGlobal;

const char* mode_name(cudaStreamCaptureMode mode) {
  switch (mode) {
    case cudaStreamCaptureModeGlobal: return "global";
    case cudaStreamCaptureModeThreadLocal: return "thread-local";
    case cudaStreamCaptureModeRelaxed: return "relaxed";
  }
  return "?";
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

Captures& captures() {
  static Captures& c = *new Captures;  // never destroyed: stream workers may outlive static destructors
  return c;
}

namespace capture_detail {

cudaError_t refuse(const char* call, cudaError_t code, const std::string& what) {
  violation(call, what);
  set_last_error(code);
  return code;
}

cudaError_t quietly(cudaError_t code) {
  set_last_error(code);
  return code;
}

std::string describe_all(const std::vector<std::shared_ptr<Capture>>& list) {
  std::string text;
  for (const auto& c : list) text += (text.empty() ? "" : "; ") + c->describe();
  return text;
}

void invalidate(const std::vector<std::shared_ptr<Capture>>& list) {
  for (const auto& c : list) c->invalidated = true;
}

pid_t thread_id() { return ::gettid(); }
cudaStreamCaptureMode thread_mode() { return mode_of_thread; }

}  // namespace capture_detail

using namespace capture_detail;

std::string Capture::describe() const {
  return fmt::format("capture #{} ({} mode, begun on {} by thread {})", id, mode_name(mode), origin->name(), thread);
}

std::string this_thread_name() { return fmt::format("thread {}", thread_id()); }

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

cudaStreamCaptureMode exchange_mode(cudaStreamCaptureMode mode) {
  std::swap(mode, mode_of_thread);
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
  c->thread = thread_id();
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
  if (c->mode != cudaStreamCaptureModeRelaxed && c->thread != thread_id())
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
