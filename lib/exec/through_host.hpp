// CUDA reductions whose numerics exist on host memory only: reproducible
// mode exact and 16-bit sums accumulated in f32 (exec/reproducible.hpp).
// Such a call runs as the same call on host memory, between two copies:
// its input comes to host scratch, run_host reduces it there (the
// transform included), and the result goes back into the caller's tensor.
// So its bits are those of the host call on the same values, and its plan
// has host stages (docs/GPU.md): it blocks, and a CUDA graph cannot hold
// it. Internal header.
#pragma once

#include <cstddef>

#include "exec/execute.hpp"

namespace strata::exec {

// Whether `numerics` run a `collective` of `dtype` with `op` through a
// host-only transform (plan::Numerics: exact_sum or widens).
bool needs_host_numerics(const plan::Numerics& numerics, Collective collective, DataType dtype, ReduceOp op);

// The call, on CUDA tensors (job.in/job.out device memory on the backend's
// device; job.op may be mean), through host memory: opens the call
// (call.mode blocking: ordered after its producer), copies the input to
// host scratch of `host` (a pinned chunk at a time), runs run_host with
// `host_choice` (a host plan) out of place there, copies the result back
// where this rank holds one, waits until it landed, and closes the call. The call check has run
// already. A timeout or a backend failure marks the backend broken.
void run_gpu_through_host(Collective collective, const plan::Choice& host_choice, const plan::Job& job,
                          std::size_t contributors, const HostContext& host, gpu::Backend& backend,
                          const gpu::CallContext& call);

}  // namespace strata::exec
