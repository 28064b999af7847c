// Element-wise reduction on host memory, the inner loop of every host
// algorithm.
#pragma once

#include <cstddef>

#include "strata/types.hpp"

namespace strata::host {

// dst[i] = a[i] op b[i] for i < count. `dst` may be exactly `a` or `b`
// (not a partial overlap). f16/bf16 are computed in f32 and rounded once;
// integer sum/prod wrap (two's complement) instead of overflowing into
// undefined behaviour. Precondition: op != mean (callers reduce with sum and
// divide at the end, see divide_by).
void reduce_into(void* dst, const void* a, const void* b, std::size_t count, DataType dtype, ReduceOp op);

// data[i] = data[i] / divisor in the element's own dtype: integers truncate
// toward zero, f16/bf16 divide in f32 and round once. This is mean's finish.
void divide_by(void* data, std::size_t count, DataType dtype, std::size_t divisor);

}  // namespace strata::host
