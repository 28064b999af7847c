// Capture that works: work on a capturing stream is recorded, not run;
// every launch of the graph runs it again with the captured arguments
// (reading what the buffers hold then) and gives the same bits; a fork to
// another stream joined back ends cleanly; the interaction modes let the
// threads that set them make potentially unsafe calls during a capture.
#include <cuda_runtime_api.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <string>
#include <thread>

#include "check.hpp"

namespace selftest {
namespace {

constexpr std::size_t kBytes = 4096;

void CUDART_CB count_run(void* counter) { ++*static_cast<std::atomic<int>*>(counter); }

unsigned char* pinned(std::size_t bytes, int value) {
  void* p = nullptr;
  SELFTEST_OK(cudaHostAlloc(&p, bytes, cudaHostAllocDefault));
  std::memset(p, value, bytes);
  return static_cast<unsigned char*>(p);
}

cudaStreamCaptureStatus status_of(cudaStream_t s) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusInvalidated;
  SELFTEST_OK(cudaStreamIsCapturing(s, &status));
  return status;
}

void record_and_replay() {
  cudaStream_t s = new_stream(), other = new_stream();
  unsigned char *a = device_bytes(kBytes), *b = device_bytes(kBytes);
  unsigned char *in = pinned(kBytes, 7), *out = pinned(kBytes, 0);
  static std::atomic<int> ran{0};

  SELFTEST_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  check(status_of(s) == cudaStreamCaptureStatusActive, "cudaStreamIsCapturing says the stream captures");
  SELFTEST_OK(cudaMemcpyAsync(a, in, kBytes, cudaMemcpyHostToDevice, s));
  SELFTEST_OK(cudaMemsetAsync(b, 0, kBytes, s));
  SELFTEST_OK(cudaMemcpyAsync(b, a, kBytes / 2, cudaMemcpyDeviceToDevice, s));
  SELFTEST_OK(cudaLaunchHostFunc(s, count_run, &ran));
  SELFTEST_OK(cudaMemcpyAsync(out, b, kBytes, cudaMemcpyDeviceToHost, s));
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  unsigned long long id = 0;
  cudaGraph_t building = nullptr;
  const cudaGraphNode_t* points = nullptr;
  std::size_t count = 0;
  SELFTEST_OK(cudaStreamGetCaptureInfo(s, &status, &id, &building, &points, nullptr, &count));
  check(status == cudaStreamCaptureStatusActive && id > 0 && building && points && count == 1,
        "cudaStreamGetCaptureInfo: active, an id, the graph, one node the next one depends on");
  cudaGraph_t graph = nullptr;
  SELFTEST_OK(cudaStreamEndCapture(s, &graph));
  check(graph != nullptr && graph == building, "cudaStreamEndCapture hands out the graph it built");
  check(status_of(s) == cudaStreamCaptureStatusNone, "the stream left capture");

  // Nothing ran at capture time.
  SELFTEST_OK(cudaStreamSynchronize(s));
  check(ran.load() == 0, "the captured host function did not run at capture");
  check(all_are(out, kBytes, 0), "the captured copy to the host did not run at capture");
  check(all_are(read_back(a, kBytes), 0xCB), "the captured upload did not run at capture");

  cudaGraphExec_t exec = nullptr;
  SELFTEST_OK(cudaGraphInstantiate(&exec, graph, 0));
  SELFTEST_OK(cudaGraphDestroy(graph));  // the executable graph does not need it
  for (int round = 1; round <= 3; ++round) {
    std::memset(in, 10 * round, kBytes);
    SELFTEST_OK(cudaGraphLaunch(exec, s));
    SELFTEST_OK(cudaStreamSynchronize(s));
    check(all_are(out, kBytes / 2, 10 * round) && all_are(out + kBytes / 2, kBytes / 2, 0),
          "launch " + std::to_string(round) + " copies what the input holds now");
    check(ran.load() == round, "the host function runs once per launch");
  }
  // The same input gives the same bits.
  std::vector<unsigned char> first(out, out + kBytes);
  std::memset(out, 0xEE, kBytes);
  SELFTEST_OK(cudaGraphLaunch(exec, s));
  SELFTEST_OK(cudaStreamSynchronize(s));
  check(std::memcmp(first.data(), out, kBytes) == 0, "a second launch on the same input gives the same bits");
  // Launches of one executable graph run one after the other, whichever
  // their streams: once the second is done, so is the first.
  const int before = ran.load();
  SELFTEST_OK(cudaGraphLaunch(exec, s));
  SELFTEST_OK(cudaGraphLaunch(exec, other));
  SELFTEST_OK(cudaStreamSynchronize(other));
  check(ran.load() == before + 2, "a launch on another stream waited for the previous launch");
  SELFTEST_OK(cudaStreamSynchronize(s));
  SELFTEST_OK(cudaGraphExecDestroy(exec));
}

void fork_and_join() {
  cudaStream_t s = new_stream(), side = new_stream();
  cudaEvent_t forked = untimed_event(), done = untimed_event();
  unsigned char *x = device_bytes(kBytes), *y = device_bytes(kBytes), *z = device_bytes(kBytes);
  unsigned char* out = pinned(kBytes, 0);

  SELFTEST_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  SELFTEST_OK(cudaMemsetAsync(x, 1, kBytes, s));
  SELFTEST_OK(cudaEventRecord(forked, s));
  SELFTEST_OK(cudaStreamWaitEvent(side, forked, 0));
  check(status_of(side) == cudaStreamCaptureStatusActive, "a stream waiting for a captured event joins the capture");
  SELFTEST_OK(cudaMemcpyAsync(y, x, kBytes, cudaMemcpyDeviceToDevice, side));
  SELFTEST_OK(cudaMemsetAsync(z, 2, kBytes, s));
  SELFTEST_OK(cudaEventRecord(done, side));
  SELFTEST_OK(cudaStreamWaitEvent(s, done, 0));
  SELFTEST_OK(cudaMemcpyAsync(out, y, kBytes, cudaMemcpyDeviceToHost, s));
  cudaGraph_t graph = nullptr;
  SELFTEST_OK(cudaStreamEndCapture(s, &graph));
  check(status_of(side) == cudaStreamCaptureStatusNone, "the joined stream left capture at its end");
  check(all_are(read_back(y, kBytes), 0xCB), "the joined stream's copy did not run at capture");

  cudaGraphExec_t exec = nullptr;
  SELFTEST_OK(cudaGraphInstantiate(&exec, graph, 0));
  SELFTEST_OK(cudaGraphLaunch(exec, s));
  SELFTEST_OK(cudaStreamSynchronize(s));
  check(all_are(out, kBytes, 1), "the side branch ran after the fork point and before the join");
  check(all_are(read_back(z, kBytes), 2), "the origin's branch ran");
  SELFTEST_OK(cudaGraphExecDestroy(exec));
  SELFTEST_OK(cudaGraphDestroy(graph));
}

// cudaEventWaitExternal: the capture waits for the event's record of the
// time of each launch, outside the graph.
void external_wait() {
  cudaStream_t s = new_stream(), producer = new_stream();
  cudaEvent_t produced = untimed_event();
  unsigned char* y = device_bytes(kBytes);
  unsigned char* out = pinned(kBytes, 0);
  SELFTEST_OK(cudaMemsetAsync(y, 5, kBytes, producer));
  SELFTEST_OK(cudaEventRecord(produced, producer));
  SELFTEST_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  SELFTEST_OK(cudaStreamWaitEvent(s, produced, cudaEventWaitExternal));
  SELFTEST_OK(cudaMemcpyAsync(out, y, kBytes, cudaMemcpyDeviceToHost, s));
  cudaGraph_t graph = nullptr;
  SELFTEST_OK(cudaStreamEndCapture(s, &graph));
  cudaGraphExec_t exec = nullptr;
  SELFTEST_OK(cudaGraphInstantiate(&exec, graph, 0));
  for (int value : {6, 7}) {
    SELFTEST_OK(cudaLaunchHostFunc(producer, [](void*) { ::usleep(20 * 1000); }, nullptr));
    SELFTEST_OK(cudaMemsetAsync(y, value, kBytes, producer));
    SELFTEST_OK(cudaEventRecord(produced, producer));
    SELFTEST_OK(cudaGraphLaunch(exec, s));
    SELFTEST_OK(cudaStreamSynchronize(s));
    check(all_are(out, kBytes, value), "the launch waited for the event's latest record");
  }
  SELFTEST_OK(cudaGraphExecDestroy(exec));
  SELFTEST_OK(cudaGraphDestroy(graph));
}

// Thread `main` captures in global mode; another thread that set its mode
// to relaxed (or thread-local) may query, synchronise and allocate; the
// capturing thread itself may in relaxed mode (how strata allocates the
// memory of a capture); a capture begun in relaxed mode prohibits nothing.
void interaction_modes() {
  cudaStream_t s = new_stream(), quiet = new_stream();
  cudaEvent_t outside = untimed_event();
  SELFTEST_OK(cudaEventRecord(outside, quiet));
  SELFTEST_OK(cudaEventSynchronize(outside));
  unsigned char* a = device_bytes(kBytes, 0);

  SELFTEST_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  SELFTEST_OK(cudaMemsetAsync(a, 3, kBytes, s));
  std::thread watcher([&] {
    cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    SELFTEST_OK(cudaThreadExchangeStreamCaptureMode(&mode));
    check(mode == cudaStreamCaptureModeGlobal, "a thread's mode starts global");
    SELFTEST_OK(cudaEventQuery(outside));
    SELFTEST_OK(cudaEventSynchronize(outside));
    SELFTEST_OK(cudaStreamQuery(quiet));
    SELFTEST_OK(cudaStreamSynchronize(quiet));
    void* p = nullptr;
    SELFTEST_OK(cudaMalloc(&p, 64));
    SELFTEST_OK(cudaFree(p));
    mode = cudaStreamCaptureModeThreadLocal;
    SELFTEST_OK(cudaThreadExchangeStreamCaptureMode(&mode));
    check(mode == cudaStreamCaptureModeRelaxed, "the exchange hands back the previous mode");
    SELFTEST_OK(cudaEventQuery(outside));  // thread-local: other threads' captures do not count
  });
  watcher.join();
  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  SELFTEST_OK(cudaThreadExchangeStreamCaptureMode(&mode));
  void* scratch = nullptr;
  SELFTEST_OK(cudaMalloc(&scratch, 64));  // the capturing thread, relaxed
  SELFTEST_OK(cudaThreadExchangeStreamCaptureMode(&mode));
  cudaGraph_t graph = nullptr;
  SELFTEST_OK(cudaStreamEndCapture(s, &graph));
  check(graph != nullptr, "the capture was not invalidated by the relaxed threads' calls");
  SELFTEST_OK(cudaFree(scratch));
  SELFTEST_OK(cudaGraphDestroy(graph));

  SELFTEST_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed));
  SELFTEST_OK(cudaMemsetAsync(a, 4, kBytes, s));
  void* p = nullptr;
  SELFTEST_OK(cudaMalloc(&p, 64));  // this thread's mode is global, but the capture is relaxed
  SELFTEST_OK(cudaFree(p));
  std::thread ender([&] { SELFTEST_OK(cudaStreamEndCapture(s, &graph)); });  // relaxed: any thread may end it
  ender.join();
  check(graph != nullptr, "a relaxed capture ends on another thread");
  SELFTEST_OK(cudaGraphDestroy(graph));
}

}  // namespace

void add_capture_cases(Cases& cases) {
  cases["record-replay"] = {record_and_replay, "capture records; every launch runs it again, same input same bits"};
  cases["fork-join"] = {fork_and_join, "a stream joined by a captured event, joined back before the end"};
  cases["external-wait"] = {external_wait, "cudaEventWaitExternal in a capture waits at each launch"};
  cases["interaction-modes"] = {interaction_modes, "relaxed and thread-local threads may query during a global capture"};
}

}  // namespace selftest
