// Graphs made by stream capture, and their executable instances. A graph
// is its nodes in capture order (each after the nodes it depends on, so
// capture order is a topological order); cudaGraphLaunch enqueues them on
// the launch stream in that order, each made anew (capture.hpp: Maker) and
// each with the stream's seeded delay, so every launch runs the captured
// work again. Launches of one executable graph are ordered after each
// other, as CUDA orders them, whichever streams they are on.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "capture.hpp"

namespace gpu_double {

struct Node {
  std::string label;   // what it does, for messages
  std::string stream;  // the stream it was captured on, for messages
  Maker make;
  std::vector<std::size_t> deps;  // earlier nodes it depends on
};

struct Graph {
  std::uint64_t capture = 0;  // the capture that built it
  std::deque<Node> nodes;     // capture order; a deque: node handles stay valid
};

// A graph for capture `capture` to fill; not yet a handle the program may use.
Graph* new_graph(std::uint64_t capture);
// Hands a finished capture's graph to the program (cudaStreamEndCapture).
cudaGraph_t hand_out(Graph* graph);
// Drops a graph no program holds (a failed capture).
void discard(Graph* graph);

// The graph a handle names, or null after a violation in `call` (never
// made, destroyed, or still being captured).
Graph* graph_of(const char* call, cudaGraph_t handle);
cudaError_t destroy_graph(const char* call, cudaGraph_t handle);
cudaGraphNode_t node_handle(Graph* graph, std::size_t index);

cudaError_t instantiate(const char* call, cudaGraphExec_t* exec, cudaGraph_t graph, unsigned long long flags);
cudaError_t destroy_exec(const char* call, cudaGraphExec_t exec);
cudaError_t launch_graph(const char* call, cudaGraphExec_t exec, Stream& stream);

}  // namespace gpu_double
