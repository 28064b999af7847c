// The finish stage: what happens to a result after the algorithm ran.
// mean runs as sum and is divided here, where the result lands, in the
// tensor's own dtype (integers truncate toward zero).
#pragma once

#include <cstddef>

#include "plan/job.hpp"

namespace strata::exec {

// For op = mean: divide `job.out` by `contributors` (ranks x replicas) when
// this rank holds a result (`has_result`). Other ops: nothing.
void finish_host(ReduceOp op, const plan::Job& job, bool has_result, std::size_t contributors);

}  // namespace strata::exec
