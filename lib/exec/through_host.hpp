// CUDA reductions whose numerics exist on host memory only: reproducible
// mode exact and 16-bit sums accumulated in f32 (exec/reproducible.hpp).
// Such a call runs as the same call on host memory, between two copies:
// its input comes to host memory, the host path reduces it there (the
// transform included), and the result goes back into the caller's
// tensors. So its bits are those of the host call on the same values, and
// its plan has host stages (docs/GPU.md): it blocks, and a CUDA graph
// cannot hold it. Internal header.
#pragma once

#include <cstddef>

#include "exec/execute.hpp"
#include "util/breaking.hpp"

namespace strata::exec {

// Whether `numerics` run a `collective` of `dtype` with `op` through a
// host-only transform (plan::Numerics: exact_sum or widens).
bool needs_host_numerics(const plan::Numerics& numerics, Collective collective, DataType dtype, ReduceOp op);

// A CUDA call open on `backend` (call.mode blocking: ordered after its
// producer) for the scope's life, with copies between device memory and
// host memory that go a chunk at a time through one pinned staging buffer
// (CUDA copies pageable memory synchronously, draining the stream), so
// pinned memory stays small whatever the tensors. Each copy has landed
// when it returns. A timeout or a backend failure inside `run` marks the
// backend broken.
class HostStaging {
 public:
  HostStaging(gpu::Backend& backend, const gpu::CallContext& call);
  ~HostStaging();
  HostStaging(const HostStaging&) = delete;
  HostStaging& operator=(const HostStaging&) = delete;

  // `bytes` from `device` (device memory) to `host`, and back.
  void download(void* host, const void* device, std::size_t bytes);
  void upload(void* device, const void* host, std::size_t bytes);
  // Runs `work` (which copies and runs the host call), marking the backend
  // broken on a timeout or backend failure, then waits until all of the
  // call's GPU work finished.
  template <typename Work>
  void run(Work&& work);

 private:
  void mark_broken(const char* what);
  void complete();

  gpu::Backend& backend_;
};

// The call, on CUDA tensors (job.in/job.out device memory on the backend's
// device; job.op may be mean), through host memory: copies the input to
// host scratch of `host`, runs run_host with `host_choice` (a host plan)
// out of place there, and copies the result back where this rank holds
// one. The call check has run already.
void run_gpu_through_host(Collective collective, const plan::Choice& host_choice, const plan::Job& job,
                          std::size_t contributors, const HostContext& host, gpu::Backend& backend,
                          const gpu::CallContext& call);

template <typename Work>
void HostStaging::run(Work&& work) {
  util::breaking_on_failure(
      [&] {
        work();
        complete();
      },
      [this](const char* what) { mark_broken(what); });
}

}  // namespace strata::exec
