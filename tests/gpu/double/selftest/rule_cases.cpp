// What capture forbids. Each case does it, checks that the call returns
// CUDA's error and (where CUDA does) that the capture is invalidated, and
// ends normally; expect_violation.py checks that the double reported it
// (exit 86 and the message). meson.build lists each case's patterns.
#include <cuda_runtime_api.h>

#include <functional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "check.hpp"

namespace selftest {
namespace {

constexpr std::size_t kBytes = 256;

cudaEvent_t recorded_event(cudaStream_t on) {
  cudaEvent_t e = untimed_event();
  SELFTEST_OK(cudaEventRecord(e, on));
  SELFTEST_OK(cudaEventSynchronize(e));
  return e;
}

// Begins a capture on `s` with one captured operation in it.
void begin(cudaStream_t s, unsigned char* scratch, cudaStreamCaptureMode mode = cudaStreamCaptureModeGlobal) {
  SELFTEST_OK(cudaStreamBeginCapture(s, mode));
  SELFTEST_OK(cudaMemsetAsync(scratch, 1, kBytes, s));
}

// The capture on `s` was invalidated: its end says so and hands out no graph.
void ends_invalidated(cudaStream_t s, const std::string& after) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  SELFTEST_OK(cudaStreamIsCapturing(s, &status));
  check(status == cudaStreamCaptureStatusInvalidated, "the capture is invalidated after " + after);
  cudaGraph_t graph = reinterpret_cast<cudaGraph_t>(&status);
  expect(cudaStreamEndCapture(s, &graph), cudaErrorStreamCaptureInvalidated, "cudaStreamEndCapture after " + after);
  check(graph == nullptr, "no graph after " + after);
}

void ends_cleanly(cudaStream_t s, const std::string& after) {
  cudaGraph_t graph = nullptr;
  SELFTEST_OK(cudaStreamEndCapture(s, &graph));
  check(graph != nullptr, "the capture survives " + after);
  if (graph) SELFTEST_OK(cudaGraphDestroy(graph));
}

void synchronize_capturing_stream() {
  cudaStream_t s = new_stream();
  unsigned char* scratch = device_bytes(kBytes);
  begin(s, scratch);
  expect(cudaStreamSynchronize(s), cudaErrorStreamCaptureUnsupported, "cudaStreamSynchronize of a capturing stream");
  ends_invalidated(s, "cudaStreamSynchronize");
  begin(s, scratch);
  expect(cudaStreamQuery(s), cudaErrorStreamCaptureUnsupported, "cudaStreamQuery of a capturing stream");
  ends_invalidated(s, "cudaStreamQuery");
}

// A blocking stream captures: the legacy stream is unusable meanwhile.
void legacy_during_capture() {
  cudaStream_t blocking = new_stream(cudaStreamDefault);
  unsigned char* scratch = device_bytes(kBytes);
  begin(blocking, scratch, cudaStreamCaptureModeRelaxed);
  expect(cudaMemsetAsync(scratch, 0, kBytes, nullptr), cudaErrorStreamCaptureImplicit,
         "work on the legacy stream while a blocking stream captures");
  ends_invalidated(blocking, "work on the legacy stream");
  begin(blocking, scratch, cudaStreamCaptureModeRelaxed);
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  expect(cudaStreamIsCapturing(cudaStreamLegacy, &status), cudaErrorStreamCaptureImplicit,
         "cudaStreamIsCapturing(cudaStreamLegacy) while a blocking stream captures");
  ends_cleanly(blocking, "cudaStreamIsCapturing(cudaStreamLegacy) (CUDA does not invalidate it)");
  // A non-blocking stream's capture leaves the legacy stream usable.
  cudaStream_t free_stream = new_stream();
  begin(free_stream, scratch);
  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  SELFTEST_OK(cudaThreadExchangeStreamCaptureMode(&mode));
  SELFTEST_OK(cudaMemset(scratch, 0, kBytes));
  SELFTEST_OK(cudaThreadExchangeStreamCaptureMode(&mode));
  ends_cleanly(free_stream, "a synchronous memset of a relaxed thread beside a non-blocking stream's capture");
}

// Every potentially unsafe call, each during a global capture of this thread.
void unsafe_calls_own_capture() {
  cudaStream_t s = new_stream(), quiet = new_stream();
  unsigned char* scratch = device_bytes(kBytes);
  void* to_free = device_bytes(kBytes);
  void* pinned_to_free = nullptr;
  SELFTEST_OK(cudaMallocHost(&pinned_to_free, kBytes));
  cudaEvent_t outside = recorded_event(quiet);
  std::vector<unsigned char> host(kBytes);
  void* p = nullptr;
  const std::vector<std::pair<const char*, std::function<cudaError_t()>>> calls = {
      {"cudaMalloc", [&] { return cudaMalloc(&p, kBytes); }},
      {"cudaFree", [&] { return cudaFree(to_free); }},
      {"cudaHostAlloc", [&] { return cudaHostAlloc(&p, kBytes, cudaHostAllocMapped); }},
      {"cudaMallocHost", [&] { return cudaMallocHost(&p, kBytes); }},
      {"cudaFreeHost", [&] { return cudaFreeHost(pinned_to_free); }},
      {"cudaMemcpy", [&] { return cudaMemcpy(host.data(), scratch, kBytes, cudaMemcpyDeviceToHost); }},
      {"cudaMemset", [&] { return cudaMemset(scratch, 0, kBytes); }},
      {"cudaDeviceSynchronize", [&] { return cudaDeviceSynchronize(); }},
      {"cudaStreamSynchronize", [&] { return cudaStreamSynchronize(quiet); }},
      {"cudaStreamQuery", [&] { return cudaStreamQuery(quiet); }},
      {"cudaEventSynchronize", [&] { return cudaEventSynchronize(outside); }},
      {"cudaEventQuery", [&] { return cudaEventQuery(outside); }},
  };
  for (const auto& [name, call] : calls) {
    begin(s, scratch);
    expect(call(), cudaErrorStreamCaptureUnsupported, std::string(name) + " during this thread's global capture");
    ends_invalidated(s, name);
  }
  SELFTEST_OK(cudaFree(to_free));
  SELFTEST_OK(cudaFreeHost(pinned_to_free));
}

// A thread in global mode (strata's watcher thread, had it not set its
// mode to relaxed) queries an event while another thread captures.
void unsafe_call_other_thread() {
  cudaStream_t s = new_stream(), quiet = new_stream();
  unsigned char* scratch = device_bytes(kBytes);
  cudaEvent_t outside = recorded_event(quiet);
  begin(s, scratch);
  std::thread watcher([&] {
    expect(cudaEventQuery(outside), cudaErrorStreamCaptureUnsupported,
           "cudaEventQuery of a global-mode thread during another thread's global capture");
  });
  watcher.join();
  ends_invalidated(s, "another thread's cudaEventQuery");
}

void unjoined_fork() {
  cudaStream_t s = new_stream(), side = new_stream();
  cudaEvent_t fork = untimed_event();
  unsigned char *scratch = device_bytes(kBytes), *other = device_bytes(kBytes);
  begin(s, scratch);
  SELFTEST_OK(cudaEventRecord(fork, s));
  SELFTEST_OK(cudaStreamWaitEvent(side, fork, 0));
  SELFTEST_OK(cudaMemsetAsync(other, 2, kBytes, side));
  cudaGraph_t graph = nullptr;
  expect(cudaStreamEndCapture(s, &graph), cudaErrorStreamCaptureUnjoined, "ending with the side stream's work unjoined");
  check(graph == nullptr, "no graph from an unjoined capture");
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusActive;
  SELFTEST_OK(cudaStreamIsCapturing(side, &status));
  check(status == cudaStreamCaptureStatusNone, "the joined stream left capture with its end");
}

// An event recorded in a capture marks a point of the graph: the host can
// neither query nor wait for it (even a relaxed thread), nor time it.
void captured_event() {
  cudaStream_t s = new_stream();
  unsigned char* scratch = device_bytes(kBytes);
  cudaEvent_t e = nullptr;
  SELFTEST_OK(cudaEventCreate(&e));
  begin(s, scratch);
  SELFTEST_OK(cudaEventRecord(e, s));
  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  SELFTEST_OK(cudaThreadExchangeStreamCaptureMode(&mode));
  expect(cudaEventQuery(e), cudaErrorCapturedEvent, "cudaEventQuery of a captured event");
  expect(cudaEventSynchronize(e), cudaErrorCapturedEvent, "cudaEventSynchronize of a captured event");
  SELFTEST_OK(cudaThreadExchangeStreamCaptureMode(&mode));
  ends_cleanly(s, "queries of a captured event");
}

void isolation() {
  cudaStream_t s = new_stream(), quiet = new_stream();
  unsigned char* scratch = device_bytes(kBytes);
  cudaEvent_t outside = recorded_event(quiet);
  begin(s, scratch);
  expect(cudaStreamWaitEvent(s, outside, 0), cudaErrorStreamCaptureIsolation,
         "a capturing stream waiting for an event recorded outside the capture");
  ends_invalidated(s, "a wait for an uncaptured event");
}

void misuses() {
  cudaStream_t s = new_stream(), t = new_stream(), joined = new_stream();
  unsigned char* scratch = device_bytes(kBytes);
  expect(cudaStreamBeginCapture(cudaStreamLegacy, cudaStreamCaptureModeGlobal), cudaErrorStreamCaptureUnsupported,
         "capture on the legacy stream");
  cudaGraph_t graph = nullptr;
  expect(cudaStreamEndCapture(s, &graph), cudaErrorIllegalState, "ending a capture never begun");
  begin(s, scratch);
  expect(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaErrorIllegalState, "beginning a capture twice");
  std::thread other([&] {
    cudaGraph_t g = nullptr;
    expect(cudaStreamEndCapture(s, &g), cudaErrorStreamCaptureWrongThread, "a global capture ended by another thread");
  });
  other.join();
  ends_cleanly(s, "an end refused on the wrong thread");

  cudaEvent_t point = untimed_event();
  begin(s, scratch);
  SELFTEST_OK(cudaEventRecord(point, s));
  SELFTEST_OK(cudaStreamWaitEvent(joined, point, 0));
  expect(cudaStreamEndCapture(joined, &graph), cudaErrorStreamCaptureUnmatched, "ending a capture on a joined stream");
  ends_invalidated(s, "an end on the joined stream");

  // Two captures cannot merge.
  begin(s, scratch);
  SELFTEST_OK(cudaEventRecord(point, s));
  begin(t, scratch);
  expect(cudaStreamWaitEvent(t, point, 0), cudaErrorStreamCaptureMerge, "a capture waiting for another's event");
  ends_invalidated(t, "a merge");
  ends_invalidated(s, "a merge");

  // A graph's copy cannot use pageable memory.
  std::vector<unsigned char> pageable(kBytes);
  begin(s, scratch);
  expect(cudaMemcpyAsync(scratch, pageable.data(), kBytes, cudaMemcpyHostToDevice, s), cudaErrorStreamCaptureUnsupported,
         "a captured copy from pageable memory");
  ends_invalidated(s, "a captured pageable copy");
}

}  // namespace

void add_rule_cases(Cases& cases) {
  cases["sync-capturing-stream"] = {synchronize_capturing_stream, "cudaStreamSynchronize/Query of a capturing stream"};
  cases["legacy-during-capture"] = {legacy_during_capture, "the legacy stream while a blocking stream captures"};
  cases["unsafe-own-capture"] = {unsafe_calls_own_capture, "each potentially unsafe call during the thread's capture"};
  cases["unsafe-other-thread"] = {unsafe_call_other_thread, "a global-mode query during another thread's capture"};
  cases["unjoined"] = {unjoined_fork, "a capture ended with a joined stream's work not joined back"};
  cases["captured-event"] = {captured_event, "queries of an event recorded in a capture"};
  cases["isolation"] = {isolation, "a capture waiting for an uncaptured event"};
  cases["capture-misuse"] = {misuses, "legacy capture, double begin, wrong thread, unmatched end, merge, pageable"};
}

}  // namespace selftest
