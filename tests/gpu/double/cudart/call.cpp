#include "call.hpp"

#include <fmt/format.h>

namespace gpu_double {
namespace {
thread_local bool inside_host_function = false;
}  // namespace

bool in_host_function() { return inside_host_function; }
void set_in_host_function(bool inside) { inside_host_function = inside; }

Call::Call(const char* name) : name_(name) {
  trace(name);
  if (inside_host_function)
    violation(name, "a CUDA call from inside a host function (cudaLaunchHostFunc): CUDA forbids it and may deadlock");
}

bool Call::failed(cudaError_t* code) const {
  const cudaError_t sticky = sticky_error(current_device());
  if (sticky == cudaSuccess) return false;
  *code = sticky;
  return true;
}

bool Call::stream_usable(Stream* stream) {
  if (!stream) return false;
  if (stream->grouped.load() > 0) {
    violation(name_, fmt::format("{} is used while NCCL work for it waits in an ncclGroupStart whose ncclGroupEnd has "
                                 "not come: that work is not in the stream yet, so this call cannot see it (an "
                                 "ncclGroupEnd skipped on an error path?)",
                                 stream->name()));
    set_last_error(cudaErrorIllegalState);
    return false;
  }
  if (stream->held.load() == 0) return true;
  violation(name_, fmt::format("{} is used while NCCL work for it is still being enqueued ({} returned "
                               "ncclInProgress; poll ncclCommGetAsyncError until ncclSuccess before using the "
                               "stream, or that work runs after what is enqueued now)",
                               stream->name(), stream->held_by.load()));
  set_last_error(cudaErrorIllegalState);
  return false;
}

}  // namespace gpu_double
