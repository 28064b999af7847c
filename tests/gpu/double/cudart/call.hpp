// The bookkeeping every runtime entry point shares: tracing, the rule that
// host functions (cudaLaunchHostFunc) make no CUDA calls, sticky errors, the
// thread's last error, and the difference between an error CUDA reports in
// normal use (returned, no violation) and a misuse (a violation too).
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "devices.hpp"
#include "report.hpp"
#include "stream.hpp"

namespace gpu_double {

// True on a stream worker while it runs a host function.
bool in_host_function();
void set_in_host_function(bool inside);

class Call {
 public:
  explicit Call(const char* name);
  const char* name() const { return name_; }

  // An error CUDA reports in normal use (no device, not ready, a fault).
  cudaError_t error(cudaError_t code) {
    set_last_error(code);
    return code;
  }
  // A misuse of the API: reported as a violation, then returned.
  cudaError_t misuse(cudaError_t code, const std::string& what) {
    violation(name_, what);
    set_last_error(code);
    return code;
  }
  // The current device's sticky error, if it has one (every call then fails with it).
  bool failed(cudaError_t* code) const;
  // A stream may be used only once NCCL operations an ncclInProgress return
  // held for it are in it; null stream pointers are already reported.
  bool stream_usable(Stream* stream);

 private:
  const char* name_;
};

}  // namespace gpu_double
