// The reduction every GPU slice owner runs on the contributions it
// gathered (psgpu, and the nccl algorithm's NaN-keeping exchange): in rank
// order, with strata's kernel, so every owner computes the same bits.
#pragma once

#include <cstddef>

#include "gpu/backend.hpp"
#include "strata/types.hpp"

namespace strata::gpu {

// acc = c0 op c1 op c2 ... over the `size` contributions of `count`
// elements at [r * slice_bytes] of `contributions` (device memory), in rank
// order; enqueued on the call's stream. op != mean.
void reduce_in_rank_order(Backend& backend, void* acc, const std::byte* contributions, std::size_t slice_bytes,
                          int size, std::size_t count, DataType dtype, ReduceOp op);

}  // namespace strata::gpu
