// Host-visible timing the double simulates: a pageable upload that lands
// after cudaMemcpy returned, the gate kernel that waits for a word of
// mapped pinned memory the host writes, and the busy kernel.
#include <cuda_runtime_api.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

#include "check.hpp"
#include "kernels.hpp"

namespace selftest {
namespace {

constexpr std::size_t kBytes = 1 << 16;

// A host function that holds its stream until the test lets it go (10 s at most).
void CUDART_CB hold(void* released) {
  auto* flag = static_cast<std::atomic<bool>*>(released);
  for (int ms = 0; ms < 10000 && !flag->load(); ++ms) ::usleep(1000);
}

// The upload is staged at the call (the buffer is free again at once) and
// lands on the legacy stream, here behind a blocking stream's held work:
// a read on a non-blocking stream right after sees the old contents, and
// reads ordered after the legacy stream see the upload.
void pageable_upload() {
  cudaStream_t blocking = nullptr, reader = nullptr;
  SELFTEST_OK(cudaStreamCreate(&blocking));
  SELFTEST_OK(cudaStreamCreateWithFlags(&reader, cudaStreamNonBlocking));
  unsigned char* d = device_bytes(kBytes, 0);
  unsigned char* out = nullptr;
  SELFTEST_OK(cudaHostAlloc(reinterpret_cast<void**>(&out), kBytes, cudaHostAllocDefault));
  static std::atomic<bool> released{false};
  SELFTEST_OK(cudaLaunchHostFunc(blocking, hold, &released));
  std::vector<unsigned char> source(kBytes, 5);
  SELFTEST_OK(cudaMemcpy(d, source.data(), kBytes, cudaMemcpyHostToDevice));
  std::memset(source.data(), 9, kBytes);  // the caller may reuse its buffer at once

  SELFTEST_OK(cudaMemcpyAsync(out, d, kBytes, cudaMemcpyDeviceToHost, reader));
  SELFTEST_OK(cudaStreamSynchronize(reader));
  check(all_are(out, kBytes, 0), "a read not ordered after the legacy stream sees what was there before the upload");
  released = true;

  cudaEvent_t uploaded = untimed_event();
  SELFTEST_OK(cudaEventRecord(uploaded, cudaStreamLegacy));
  SELFTEST_OK(cudaStreamWaitEvent(reader, uploaded, 0));
  SELFTEST_OK(cudaMemcpyAsync(out, d, kBytes, cudaMemcpyDeviceToHost, reader));
  SELFTEST_OK(cudaStreamSynchronize(reader));
  check(all_are(out, kBytes, 5), "a read after an event recorded on the legacy stream sees the upload (as staged)");
  std::memset(out, 0, kBytes);
  SELFTEST_OK(cudaMemcpyAsync(out, d, kBytes, cudaMemcpyDeviceToHost, blocking));
  SELFTEST_OK(cudaStreamSynchronize(blocking));
  check(all_are(out, kBytes, 5), "a blocking stream's read orders after the upload");
  check(all_are(read_back(d, kBytes), 5), "a synchronous copy back sees the upload");
}

void store(volatile unsigned* word, unsigned value) {
  __atomic_store_n(const_cast<unsigned*>(word), value, __ATOMIC_RELEASE);
}

// The gate holds its stream until the host writes the word; captured, it
// waits again at every launch. Nothing here depends on time: a closed gate
// cannot pass, however long the check takes.
void gate() {
  cudaStream_t s = new_stream();
  cudaEvent_t passed = untimed_event();
  unsigned* raw = nullptr;
  SELFTEST_OK(cudaHostAlloc(reinterpret_cast<void**>(&raw), sizeof(unsigned), cudaHostAllocMapped));
  volatile unsigned* word = raw;
  void* on_device = nullptr;
  SELFTEST_OK(cudaHostGetDevicePointer(&on_device, raw, 0));
  check(on_device == raw, "cudaHostGetDevicePointer gives the host address (unified addressing)");

  store(word, 0xFFFFFFF0u);
  SELFTEST_OK(launch_gate(static_cast<const volatile unsigned*>(on_device), 0x10u, s));  // 32 steps on, across the wrap
  SELFTEST_OK(cudaEventRecord(passed, s));
  ::usleep(20 * 1000);
  expect(cudaEventQuery(passed), cudaErrorNotReady, "the gate holds its stream while (int)(word - target) < 0");
  store(word, 0x10u);
  SELFTEST_OK(cudaEventSynchronize(passed));

  SELFTEST_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  SELFTEST_OK(launch_gate(word, 0x20u, s));
  cudaGraph_t graph = nullptr;
  SELFTEST_OK(cudaStreamEndCapture(s, &graph));
  cudaGraphExec_t exec = nullptr;
  SELFTEST_OK(cudaGraphInstantiate(&exec, graph, 0));
  SELFTEST_OK(cudaGraphLaunch(exec, s));
  SELFTEST_OK(cudaEventRecord(passed, s));
  ::usleep(20 * 1000);
  expect(cudaEventQuery(passed), cudaErrorNotReady, "a captured gate waits at its launch");
  store(word, 0x20u);
  SELFTEST_OK(cudaEventSynchronize(passed));
  SELFTEST_OK(cudaGraphExecDestroy(exec));
  SELFTEST_OK(cudaGraphDestroy(graph));
  SELFTEST_OK(cudaFreeHost(raw));
}

// busy_kernel(ns) keeps its stream that long: the events around it are at
// least that far apart (sleeping never ends early).
void busy() {
  cudaStream_t s = new_stream();
  cudaEvent_t start = nullptr, stop = nullptr;
  SELFTEST_OK(cudaEventCreate(&start));
  SELFTEST_OK(cudaEventCreate(&stop));
  constexpr long long kNanoseconds = 20'000'000;
  SELFTEST_OK(cudaEventRecord(start, s));
  SELFTEST_OK(launch_busy(kNanoseconds, s));
  SELFTEST_OK(cudaEventRecord(stop, s));
  SELFTEST_OK(cudaEventSynchronize(stop));
  float ms = 0;
  SELFTEST_OK(cudaEventElapsedTime(&ms, start, stop));
  check(ms >= kNanoseconds / 1e6f, "the busy kernel held its stream for its whole duration");
}

// A gate whose word is pageable memory: the kernel would fault on it.
void gate_on_pageable_word() {
  cudaStream_t s = new_stream();
  static unsigned word = 0;
  SELFTEST_OK(launch_gate(&word, 0, s));
  expect(cudaStreamSynchronize(s), cudaErrorIllegalAddress, "the gate on a pageable word faulted");
}

// A gate nobody opens: the double ends the process naming it, after
// STRATA_FAKE_HANG_SECONDS (meson sets 2 for this case).
void gate_never_opens() {
  cudaStream_t s = new_stream();
  unsigned* word = nullptr;
  SELFTEST_OK(cudaHostAlloc(reinterpret_cast<void**>(&word), sizeof(unsigned), cudaHostAllocMapped));
  *word = 0;
  SELFTEST_OK(launch_gate(word, 1, s));
  if (!all_passed()) ::_exit(1);
  std::printf("test_double_capture gate-hang: checks passed\n");
  std::fflush(stdout);
  std::this_thread::sleep_for(std::chrono::seconds(30));
  std::printf("FAIL: the double did not end the process of a gate that never opened\n");
  std::fflush(stdout);
  ::_exit(1);
}

}  // namespace

void add_memory_cases(Cases& cases) {
  cases["pageable-upload"] = {pageable_upload, "a pageable cudaMemcpy upload lands later, on the legacy stream"};
  cases["gate"] = {gate, "strata::cuda::gate_kernel waits for the host's word, also when replayed"};
  cases["busy"] = {busy, "strata::bench::busy_kernel keeps its stream busy"};
  cases["gate-pageable"] = {gate_on_pageable_word, "a gate whose word is not pinned memory faults"};
  cases["gate-hang"] = {gate_never_opens, "a gate that never opens ends the process, named"};
}

}  // namespace selftest
