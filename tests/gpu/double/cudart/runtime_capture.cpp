// Runtime entry points: stream capture and graphs (capture.hpp, graph.hpp).
#include <fmt/format.h>

#include <cstring>
#include <vector>

#include "call.hpp"
#include "capture.hpp"
#include "graph.hpp"

using namespace gpu_double;

namespace {

// A capturing or capture-ending call on `handle`: the stream, or null
// after the error is set.
Stream* usable_stream(Call& call, cudaStream_t handle) {
  Stream* stream = stream_of(call.name(), handle);
  if (!call.stream_usable(stream)) {
    call.error(cudaErrorInvalidResourceHandle);
    return nullptr;
  }
  return stream;
}

// A call that starts work on `handle` (a capture, a graph launch): the
// device's sticky error fails it first; then `start` runs on the stream
// usable_stream gives, and its status is returned.
template <typename Start>
cudaError_t start_on(Call& call, cudaStream_t handle, Start&& start) {
  cudaError_t sticky = cudaSuccess;
  if (call.failed(&sticky)) return call.error(sticky);
  Stream* stream = usable_stream(call, handle);
  if (!stream) return cudaErrorInvalidResourceHandle;
  return start(*stream);
}

}  // namespace

extern "C" {

cudaError_t cudaStreamBeginCapture(cudaStream_t handle, cudaStreamCaptureMode mode) {
  Call call("cudaStreamBeginCapture");
  return start_on(call, handle, [&](Stream& stream) { return begin_capture(call.name(), stream, mode); });
}

cudaError_t cudaStreamEndCapture(cudaStream_t handle, cudaGraph_t* graph) {
  Call call("cudaStreamEndCapture");
  if (!graph) return call.misuse(cudaErrorInvalidValue, "pGraph is null");
  *graph = nullptr;
  Stream* stream = usable_stream(call, handle);
  if (!stream) return cudaErrorInvalidResourceHandle;
  Graph* made = nullptr;
  const cudaError_t e = end_capture(call.name(), *stream, &made);
  if (e == cudaSuccess) *graph = hand_out(made);
  return e;
}

cudaError_t cudaStreamIsCapturing(cudaStream_t handle, cudaStreamCaptureStatus* status) {
  Call call("cudaStreamIsCapturing");
  if (!status) return call.misuse(cudaErrorInvalidValue, "pCaptureStatus is null");
  Stream* stream = stream_of(call.name(), handle);
  if (!stream) return call.error(cudaErrorInvalidResourceHandle);
  return capture_status(call.name(), *stream, status, nullptr, nullptr, nullptr);
}

cudaError_t cudaStreamGetCaptureInfo(cudaStream_t handle, cudaStreamCaptureStatus* status, unsigned long long* id,
                                     cudaGraph_t* graph, const cudaGraphNode_t** dependencies,
                                     const cudaGraphEdgeData** edge_data, size_t* count) {
  Call call("cudaStreamGetCaptureInfo");
  if (!status) return call.misuse(cudaErrorInvalidValue, "captureStatus_out is null");
  if (edge_data && !dependencies)
    return call.misuse(cudaErrorInvalidValue, "edgeData_out is given without dependencies_out");
  Stream* stream = stream_of(call.name(), handle);
  if (!stream) return call.error(cudaErrorInvalidResourceHandle);
  Graph* building = nullptr;
  std::vector<std::size_t> tips;
  if (const cudaError_t e = capture_status(call.name(), *stream, status, id, &building, &tips)) return e;
  if (*status != cudaStreamCaptureStatusActive) return cudaSuccess;
  // The arrays stay valid until the thread's next call here (CUDA: until
  // the next call on the stream).
  thread_local std::vector<cudaGraphNode_t> nodes;
  thread_local std::vector<cudaGraphEdgeData> edges;
  nodes.clear();
  for (std::size_t t : tips) nodes.push_back(node_handle(building, t));
  edges.assign(nodes.size(), cudaGraphEdgeData{});
  if (graph) *graph = reinterpret_cast<cudaGraph_t>(building);
  if (dependencies) *dependencies = nodes.data();
  if (edge_data) *edge_data = edges.data();
  if (count) *count = nodes.size();
  return cudaSuccess;
}

cudaError_t cudaThreadExchangeStreamCaptureMode(cudaStreamCaptureMode* mode) {
  Call call("cudaThreadExchangeStreamCaptureMode");
  if (!mode) return call.misuse(cudaErrorInvalidValue, "mode is null");
  if (*mode != cudaStreamCaptureModeGlobal && *mode != cudaStreamCaptureModeThreadLocal &&
      *mode != cudaStreamCaptureModeRelaxed)
    return call.misuse(cudaErrorInvalidValue, fmt::format("capture mode {} does not exist", int(*mode)));
  *mode = exchange_mode(*mode);
  return cudaSuccess;
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph, unsigned long long flags) {
  Call call("cudaGraphInstantiate");
  if (!exec) return call.misuse(cudaErrorInvalidValue, "pGraphExec is null");
  return instantiate(call.name(), exec, graph, flags);
}

cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t* exec, cudaGraph_t graph, unsigned long long flags) {
  Call call("cudaGraphInstantiateWithFlags");
  if (!exec) return call.misuse(cudaErrorInvalidValue, "pGraphExec is null");
  return instantiate(call.name(), exec, graph, flags);
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t handle) {
  Call call("cudaGraphLaunch");
  return start_on(call, handle, [&](Stream& stream) { return launch_graph(call.name(), exec, stream); });
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  Call call("cudaGraphDestroy");
  return destroy_graph(call.name(), graph);
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
  Call call("cudaGraphExecDestroy");
  return destroy_exec(call.name(), exec);
}

}  // extern "C"
