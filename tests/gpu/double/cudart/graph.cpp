#include "graph.hpp"

#include <fmt/format.h>

#include <map>
#include <mutex>

#include "devices.hpp"
#include "report.hpp"

namespace gpu_double {
namespace {

struct Exec {
  std::uint64_t capture = 0;
  std::vector<Node> nodes;
  Point last;  // the last operation of the latest launch: the next launch waits for it
  std::uint64_t launches = 0;
};

enum class State { capturing, held, destroyed };

struct Graphs {
  std::mutex mutex;
  std::map<Graph*, State> graphs;  // never deleted: a destroyed handle stays recognisable
  std::map<Exec*, bool> execs;     // true: destroyed
};

Graphs& graphs() {
  static Graphs& g = *new Graphs;
  return g;
}

cudaError_t refuse(const char* call, cudaError_t code, const std::string& what) {
  violation(call, what);
  set_last_error(code);
  return code;
}

Exec* exec_of(const char* call, cudaGraphExec_t handle) {
  auto* exec = reinterpret_cast<Exec*>(handle);
  Graphs& all = graphs();
  std::lock_guard lock(all.mutex);
  const auto it = all.execs.find(exec);
  if (it == all.execs.end()) {
    refuse(call, cudaErrorInvalidResourceHandle,
           fmt::format("executable graph handle {} was not made by cudaGraphInstantiate", static_cast<void*>(handle)));
    return nullptr;
  }
  if (it->second) {
    refuse(call, cudaErrorInvalidResourceHandle,
           fmt::format("executable graph {} (of capture #{}) was destroyed", static_cast<void*>(handle), exec->capture));
    return nullptr;
  }
  return exec;
}

}  // namespace

Graph* new_graph(std::uint64_t capture) {
  auto* g = new Graph;
  g->capture = capture;
  Graphs& all = graphs();
  std::lock_guard lock(all.mutex);
  all.graphs[g] = State::capturing;
  return g;
}

cudaGraph_t hand_out(Graph* graph) {
  Graphs& all = graphs();
  std::lock_guard lock(all.mutex);
  all.graphs[graph] = State::held;
  return reinterpret_cast<cudaGraph_t>(graph);
}

void discard(Graph* graph) {
  Graphs& all = graphs();
  std::lock_guard lock(all.mutex);
  all.graphs[graph] = State::destroyed;
  graph->nodes.clear();
}

Graph* graph_of(const char* call, cudaGraph_t handle) {
  auto* graph = reinterpret_cast<Graph*>(handle);
  Graphs& all = graphs();
  std::lock_guard lock(all.mutex);
  const auto it = all.graphs.find(graph);
  std::string problem;
  if (it == all.graphs.end()) problem = "was not made by cudaStreamEndCapture";
  else if (it->second == State::capturing)
    problem = fmt::format("is still being captured (capture #{}): end the capture first", graph->capture);
  else if (it->second == State::destroyed)
    problem = fmt::format("(of capture #{}) was destroyed", graph->capture);
  if (problem.empty()) return graph;
  refuse(call, cudaErrorInvalidValue, fmt::format("graph handle {} {}", static_cast<void*>(handle), problem));
  return nullptr;
}

cudaError_t destroy_graph(const char* call, cudaGraph_t handle) {
  Graph* graph = graph_of(call, handle);
  if (!graph) return cudaErrorInvalidValue;
  discard(graph);  // executable graphs made from it keep their own copy
  return cudaSuccess;
}

cudaGraphNode_t node_handle(Graph* graph, std::size_t index) {
  return reinterpret_cast<cudaGraphNode_t>(&graph->nodes[index]);
}

cudaError_t instantiate(const char* call, cudaGraphExec_t* out, cudaGraph_t handle, unsigned long long flags) {
  *out = nullptr;
  Graph* graph = graph_of(call, handle);
  if (!graph) return cudaErrorInvalidValue;
  constexpr unsigned long long kKnown =
      cudaGraphInstantiateFlagAutoFreeOnLaunch | cudaGraphInstantiateFlagUpload | cudaGraphInstantiateFlagUseNodePriority;
  if (flags & ~kKnown)
    return refuse(call, cudaErrorInvalidValue,
                  fmt::format("flags {:#x}: the test double simulates host-launched graphs only (no "
                              "cudaGraphInstantiateFlagDeviceLaunch)",
                              flags));
  auto* exec = new Exec;
  Graphs& all = graphs();
  std::lock_guard lock(all.mutex);
  exec->capture = graph->capture;
  exec->nodes.assign(graph->nodes.begin(), graph->nodes.end());
  all.execs[exec] = false;
  *out = reinterpret_cast<cudaGraphExec_t>(exec);
  return cudaSuccess;
}

cudaError_t destroy_exec(const char* call, cudaGraphExec_t handle) {
  Exec* exec = exec_of(call, handle);
  if (!exec) return cudaErrorInvalidResourceHandle;
  Graphs& all = graphs();
  std::lock_guard lock(all.mutex);
  all.execs[exec] = true;  // launches in flight hold copies of their operations
  return cudaSuccess;
}

cudaError_t launch_graph(const char* call, cudaGraphExec_t handle, Stream& on) {
  Exec* exec = exec_of(call, handle);
  if (!exec) return cudaErrorInvalidResourceHandle;
  Stream* stream = &on;
  std::vector<Node> nodes;
  Point previous;
  {
    Graphs& all = graphs();
    std::lock_guard lock(all.mutex);
    nodes = exec->nodes;
    previous = exec->last;
  }
  if (capturing(*stream)) {
    // Launched into a capture: its nodes join that capture, in order.
    for (Node& n : nodes)
      if (const cudaError_t e = record_node(call, {stream}, n.label, n.make)) return e;
    return cudaSuccess;
  }
  if (const cudaError_t e = check_legacy(call, *stream)) return e;
  std::uint64_t seq = 0;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    Op op = nodes[i].make();  // waits it carries are external ones (cudaEventWaitExternal)
    if (i == 0 && previous.stream && previous.stream != stream) op.after.push_back(previous);
    seq = submit(*stream, std::move(op));
  }
  Graphs& all = graphs();
  std::lock_guard lock(all.mutex);
  ++exec->launches;
  if (seq) exec->last = {stream, seq};
  return cudaSuccess;
}

}  // namespace gpu_double
