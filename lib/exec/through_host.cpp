#include "exec/through_host.hpp"

#include <algorithm>
#include <cstddef>
#include <cstring>

#include "exec/reproducible.hpp"
#include "plan/collective.hpp"

namespace strata::exec {
namespace {

// Bytes a copy moves through the pinned buffer at a time.
constexpr std::size_t kChunkBytes = 4u << 20;

// Host workspace slots of a single call's staged input and output (above
// the transforms' own, exec/reproducible.cpp).
constexpr std::size_t kStagedInSlot = 110, kStagedOutSlot = 111;

}  // namespace

bool needs_host_numerics(const plan::Numerics& numerics, Collective collective, DataType dtype, ReduceOp op) {
  return plan::reduces(collective) && (numerics.exact_sum(dtype, op) || numerics.widens(dtype, op));
}

HostStaging::HostStaging(gpu::Backend& backend, const gpu::CallContext& call) : backend_(backend) {
  backend_.open(call);
}

HostStaging::~HostStaging() { backend_.close(); }

void HostStaging::download(void* host, const void* device, std::size_t bytes) {
  for (std::size_t done = 0; done < bytes; done += kChunkBytes) {
    const std::size_t n = std::min(kChunkBytes, bytes - done);
    void* pinned = backend_.staging(0, n);
    backend_.copy(pinned, static_cast<const std::byte*>(device) + done, n, gpu::Copy::device_to_host);
    backend_.wait();
    std::memcpy(static_cast<std::byte*>(host) + done, pinned, n);
  }
}

void HostStaging::upload(void* device, const void* host, std::size_t bytes) {
  for (std::size_t done = 0; done < bytes; done += kChunkBytes) {
    const std::size_t n = std::min(kChunkBytes, bytes - done);
    void* pinned = backend_.staging(0, n);
    std::memcpy(pinned, static_cast<const std::byte*>(host) + done, n);
    backend_.copy(static_cast<std::byte*>(device) + done, pinned, n, gpu::Copy::host_to_device);
    backend_.wait();
  }
}

void HostStaging::mark_broken(const char* what) { backend_.mark_broken(what); }

void HostStaging::complete() { backend_.complete(); }

void run_gpu_through_host(Collective collective, const plan::Choice& host_choice, const plan::Job& job,
                          std::size_t contributors, const HostContext& host, gpu::Backend& backend,
                          const gpu::CallContext& call) {
  HostStaging staging(backend, call);
  staging.run([&] {
    const bool holds = plan::holds_reduction(collective, host.rank, job.root);
    const std::size_t in_bytes = input_count(collective, job, host.size) * job.element_bytes();
    void* staged_in = host.workspace->get(kStagedInSlot, in_bytes);
    plan::Job staged = job;
    staged.in = staged_in;
    staged.out = holds ? host.workspace->get(kStagedOutSlot, job.bytes()) : nullptr;
    staging.download(staged_in, job.in, in_bytes);
    run_host(collective, host_choice, staged, contributors, host, *call.deadline, call.info, nullptr);
    if (holds) staging.upload(job.out, staged.out, job.bytes());
  });
}

}  // namespace strata::exec
