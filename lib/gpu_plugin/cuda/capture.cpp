#include "gpu_plugin/cuda/capture.hpp"

namespace strata::cuda {

gpu::Capture capture_status(void* stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  const cudaError_t rc =
      cudaStreamIsCapturing(stream ? static_cast<cudaStream_t>(stream) : cudaStreamLegacy, &status);
  if (rc == cudaErrorStreamCaptureImplicit) {
    cudaGetLastError();  // the answer, not a failure of ours: leave no error behind
    return gpu::Capture::implicit;
  }
  if (rc != cudaSuccess) {
    cudaGetLastError();
    return gpu::Capture::none;  // (a bad handle fails where the call uses it, with its own message)
  }
  switch (status) {
    case cudaStreamCaptureStatusActive: return gpu::Capture::active;
    case cudaStreamCaptureStatusInvalidated: return gpu::Capture::invalidated;
    default: return gpu::Capture::none;
  }
}

void relax_capture_checks() {
  thread_local bool relaxed = false;
  if (relaxed) return;
  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  if (cudaThreadExchangeStreamCaptureMode(&mode) == cudaSuccess) relaxed = true;
  else cudaGetLastError();
}

RelaxedCapture::RelaxedCapture() {
  if (cudaThreadExchangeStreamCaptureMode(&previous_) != cudaSuccess) {
    cudaGetLastError();
    previous_ = cudaStreamCaptureModeRelaxed;  // nothing to restore
  }
}

RelaxedCapture::~RelaxedCapture() {
  cudaStreamCaptureMode mode = previous_;
  if (cudaThreadExchangeStreamCaptureMode(&mode) != cudaSuccess) cudaGetLastError();
}

}  // namespace strata::cuda
