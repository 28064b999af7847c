// The finish stage: what happens to a result after the algorithm ran.
// mean runs as sum and is divided here, where the result lands, in the
// tensor's own dtype (integers truncate toward zero): on the host with
// host::divide_by, on CUDA tensors with the GPU backend's divide hook
// (strata's kernel, enqueued after the call's work). The same rule for both.
#pragma once

#include <cstddef>

#include "gpu/backend.hpp"
#include "plan/job.hpp"

namespace strata::exec {

// Whether the finish stage divides: op = mean where this rank holds a result.
inline bool divides(ReduceOp op, bool has_result) { return op == ReduceOp::mean && has_result; }

// Host memory: divide `job.out` by `contributors` (ranks x replicas) when
// divides(op, has_result). Other ops: nothing.
void finish_host(ReduceOp op, const plan::Job& job, bool has_result, std::size_t contributors);

// CUDA memory: the same through `backend`'s divide hook, on replica
// `replica`'s buffer (job.out).
void finish_gpu(ReduceOp op, const plan::Job& job, bool has_result, std::size_t contributors, gpu::Backend& backend,
                std::size_t replica);

}  // namespace strata::exec
