// CUDA graph capture as the plugin sees it: whether a stream is capturing,
// and the thread's capture interaction mode (cudaThreadExchangeStreamCaptureMode).
// During a capture begun in CUDA's default (global) mode, "potentially
// unsafe" calls — allocations, synchronous copies, stream and event queries
// and synchronisation — fail and invalidate the capture when the calling
// thread is in global mode. strata's own threads (the watcher, the progress
// thread) switch to relaxed mode for good, so that their queries never break
// a graph the application captures on another thread; the capturing thread
// allocates a captured call's memory inside a relaxed scope, as NCCL does.
#pragma once

#include <cuda_runtime_api.h>

#include "gpu/plugin.hpp"

namespace strata::cuda {

// gpu::capture_status: what work enqueued on `stream` (null: the legacy
// default stream of the current device) would be now. Never throws.
gpu::Capture capture_status(void* stream);

// gpu::relax_capture_checks: the calling thread's mode becomes relaxed, for
// good (once per thread; later calls do nothing). Never throws.
void relax_capture_checks();

// The calling thread in relaxed mode for the scope's lifetime, then back
// to the mode it had (allocations for a captured call).
class RelaxedCapture {
 public:
  RelaxedCapture();
  ~RelaxedCapture();
  RelaxedCapture(const RelaxedCapture&) = delete;
  RelaxedCapture& operator=(const RelaxedCapture&) = delete;

 private:
  cudaStreamCaptureMode previous_ = cudaStreamCaptureModeRelaxed;
};

}  // namespace strata::cuda
