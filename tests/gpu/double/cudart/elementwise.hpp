// Element arithmetic of the device side: what strata's kernels compute and
// what NCCL's reductions compute, on host memory. Sums and products reuse
// strata's host reduction (lib/host/reduce_kernel.cpp: f16/bf16 in f32,
// rounded once per step, which gives the bits of the GPU's native paired
// instructions; integers wrap), with a NaN result made the GPU's canonical
// NaN. min and max differ: strata's kernels let a NaN win and return an
// operand's own bits; NCCL's drop a NaN (fminf/fmaxf), which is why strata
// must never hand NCCL a floating min or max.
#pragma once

#include <cstddef>

#include "strata/types.hpp"

namespace gpu_double {

enum class Semantics { strata_kernel, nccl };

std::size_t element_bytes(strata::DataType dtype);

// dst[i] = a[i] op b[i] for i < count; dst may be exactly a or b. op != mean.
void combine(void* dst, const void* a, const void* b, std::size_t count, strata::DataType dtype, strata::ReduceOp op,
             Semantics semantics);

// data[i] /= divisor in the dtype (strata's mean finish: integers truncate).
void divide(void* data, std::size_t count, strata::DataType dtype, std::size_t divisor);

}  // namespace gpu_double
