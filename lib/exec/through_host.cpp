#include "exec/through_host.hpp"

#include <algorithm>
#include <cstddef>
#include <cstring>

#include "exec/reproducible.hpp"
#include "plan/collective.hpp"
#include "util/breaking.hpp"

namespace strata::exec {
namespace {

// Host workspace slots of the staged input and output (above the
// transforms' own, exec/reproducible.cpp).
constexpr std::size_t kStagedInSlot = 110, kStagedOutSlot = 111;

// Copies go through one pinned staging buffer of the backend (CUDA copies
// pageable memory synchronously, draining the stream) a chunk at a time:
// pinned memory stays this small whatever the tensor.
constexpr std::size_t kChunkBytes = 4u << 20;

// `bytes` from device memory at `device` to host memory at `host`.
void download(gpu::Backend& backend, void* host, const void* device, std::size_t bytes) {
  for (std::size_t done = 0; done < bytes; done += kChunkBytes) {
    const std::size_t n = std::min(kChunkBytes, bytes - done);
    void* pinned = backend.staging(0, n);
    backend.copy(pinned, static_cast<const std::byte*>(device) + done, n, gpu::Copy::device_to_host);
    backend.wait();
    std::memcpy(static_cast<std::byte*>(host) + done, pinned, n);
  }
}

// `bytes` from host memory at `host` to device memory at `device`.
void upload(gpu::Backend& backend, void* device, const void* host, std::size_t bytes) {
  for (std::size_t done = 0; done < bytes; done += kChunkBytes) {
    const std::size_t n = std::min(kChunkBytes, bytes - done);
    void* pinned = backend.staging(0, n);
    std::memcpy(pinned, static_cast<const std::byte*>(host) + done, n);
    backend.copy(static_cast<std::byte*>(device) + done, pinned, n, gpu::Copy::host_to_device);
    backend.wait();
  }
}

// Opens the call for its scope.
class OpenCall {
 public:
  OpenCall(gpu::Backend& backend, const gpu::CallContext& call) : backend_(backend) { backend_.open(call); }
  ~OpenCall() { backend_.close(); }
  OpenCall(const OpenCall&) = delete;
  OpenCall& operator=(const OpenCall&) = delete;

 private:
  gpu::Backend& backend_;
};

}  // namespace

bool needs_host_numerics(const plan::Numerics& numerics, Collective collective, DataType dtype, ReduceOp op) {
  return plan::reduces(collective) && (numerics.exact_sum(dtype, op) || numerics.widens(dtype, op));
}

void run_gpu_through_host(Collective collective, const plan::Choice& host_choice, const plan::Job& job,
                          std::size_t contributors, const HostContext& host, gpu::Backend& backend,
                          const gpu::CallContext& call) {
  const OpenCall open(backend, call);
  util::breaking_on_failure(
      [&] {
        const bool holds = plan::holds_reduction(collective, host.rank, job.root);
        const std::size_t in_bytes = input_count(collective, job, host.size) * job.element_bytes();
        const std::size_t out_bytes = job.bytes();
        void* staged_in = host.workspace->get(kStagedInSlot, in_bytes);
        plan::Job staged = job;
        staged.in = staged_in;
        staged.out = holds ? host.workspace->get(kStagedOutSlot, out_bytes) : nullptr;
        download(backend, staged_in, job.in, in_bytes);
        run_host(collective, host_choice, staged, contributors, host, *call.deadline, call.info, nullptr);
        if (holds) upload(backend, job.out, staged.out, out_bytes);
        backend.complete();
      },
      [&backend](const char* what) { backend.mark_broken(what); });
}

}  // namespace strata::exec
