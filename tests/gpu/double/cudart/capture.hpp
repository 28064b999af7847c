// Stream capture, as CUDA enforces it. cudaStreamBeginCapture puts a stream
// into capture: work enqueued on it is recorded into a graph instead of run
// (graph.hpp replays it at each cudaGraphLaunch). An event recorded on a
// capturing stream marks a point of the capture; a stream that waits for
// such an event joins the capture, and cudaStreamEndCapture requires every
// joined stream's work to have been joined back into the origin stream.
//
// What capture forbids returns CUDA's error, invalidates the capture (its
// cudaStreamEndCapture then fails with cudaErrorStreamCaptureInvalidated)
// and is a violation, because strata must never do it:
//   - synchronising with or querying a capturing stream, or a device with
//     one (cudaErrorStreamCaptureUnsupported);
//   - using the legacy default stream while a blocking stream of its
//     device captures (cudaErrorStreamCaptureImplicit);
//   - the "potentially unsafe" calls (allocation, synchronous copies and
//     sets, synchronisation and queries) from a thread that CUDA's
//     interaction-mode rule prohibits (cudaThreadExchangeStreamCaptureMode):
//     the thread has an ongoing capture not begun in relaxed mode, or its
//     mode is global and another thread has a capture begun in global mode;
//   - waiting in a capture for an event recorded outside it
//     (cudaErrorStreamCaptureIsolation) or in another capture
//     (cudaErrorStreamCaptureMerge).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "stream.hpp"

namespace gpu_double {

struct Capture;
struct Graph;

// What a graph node enqueues at each launch, made anew every time (NCCL
// operations take their numbers on their communicator when launched).
using Maker = std::function<Op()>;

// "thread 1234": the calling host thread as messages name it.
std::string this_thread_name();

// Enqueues `op` on `stream` for runtime call `call`. On a capturing stream
// it is recorded into the capture instead (every launch replays a copy);
// `*seq` (when given) is then 0. Refused, with the error the call returns,
// for the legacy stream while a blocking stream of its device captures and
// for a stream whose capture was invalidated.
cudaError_t enqueue(const char* call, Stream& stream, Op op, std::uint64_t* seq = nullptr);

// Records a node made anew at each launch into the capture of every
// stream in `streams` (one capture: they must share it), after each
// stream's point; it becomes their new point. Returns cudaSuccess,
// cudaErrorStreamCaptureInvalidated, or cudaErrorStreamCaptureMerge (a
// violation) when the streams are in different captures.
cudaError_t record_node(const char* call, const std::vector<Stream*>& streams, const std::string& label, Maker make);

// Whether `stream` takes part in a capture now (invalidated or not).
bool capturing(Stream& stream);

// For cudaEventRecord: `*mark` receives the stream's point when it
// captures (mark->capture null when it does not). Fails with
// cudaErrorStreamCaptureInvalidated for an invalidated capture.
cudaError_t capture_mark(const char* call, Stream& stream, Mark* mark);

// For cudaStreamWaitEvent(stream, an event last recorded at `mark` in a
// capture): the stream joins that capture, or its point grows, or the
// error the call returns (reported where it is a misuse).
cudaError_t join(const char* call, Stream& stream, const Mark& mark);

// For cudaStreamWaitEvent on a capturing stream with an event recorded
// outside any capture: cudaErrorStreamCaptureIsolation, reported, and the
// capture invalidated (cudaEventWaitExternal is the way to do it).
cudaError_t isolation(const char* call, Stream& stream, const std::string& event);

// Refuses what a capturing `stream` cannot record (reported), and
// invalidates its capture.
cudaError_t refuse_in_capture(const char* call, Stream& stream, cudaError_t code, const std::string& what);

// cudaStreamSynchronize / cudaStreamQuery of `stream`: refused for a
// capturing stream, and for the legacy stream while a blocking stream of
// its device captures. Then the interaction-mode rule.
cudaError_t check_stream_wait(const char* call, Stream& stream);
// cudaDeviceSynchronize: refused while a stream of `device` captures. Then
// the interaction-mode rule.
cudaError_t check_device_wait(const char* call, int device);
// The interaction-mode rule for a potentially unsafe call of this thread.
cudaError_t check_unsafe(const char* call);
// The legacy stream of `device` may not be used while a blocking stream of
// that device captures (cudaErrorStreamCaptureImplicit). `invalidate`:
// whether the use invalidates those captures (not for a status query).
cudaError_t check_legacy(const char* call, Stream& stream, bool invalidate = true);
// For an event last recorded in a capture: cudaErrorCapturedEvent,
// reported (queries and synchronisation of such an event are misuses).
cudaError_t captured_event(const char* call, const Mark& mark);

// The calling thread's interaction mode (cudaThreadExchangeStreamCaptureMode).
cudaStreamCaptureMode exchange_mode(cudaStreamCaptureMode mode);

// cudaStreamBeginCapture, cudaStreamEndCapture, cudaStreamIsCapturing and
// cudaStreamGetCaptureInfo on `stream` (already resolved and usable).
cudaError_t begin_capture(const char* call, Stream& stream, cudaStreamCaptureMode mode);
cudaError_t end_capture(const char* call, Stream& stream, Graph** graph);
cudaError_t capture_status(const char* call, Stream& stream, cudaStreamCaptureStatus* status, unsigned long long* id,
                           Graph** graph, std::vector<std::size_t>* tips);

}  // namespace gpu_double
