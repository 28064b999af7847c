// NaN semantics, one for every path: sum and prod propagate NaN (IEEE), and
// min and max with a NaN input give NaN — the host kernels
// (lib/host/reduce_kernel), strata's CUDA kernels (lib/gpu_plugin/cuda) and the host
// `mpi` algorithm all keep it, so a NaN gradient is never hidden. NCCL's
// ncclMin and ncclMax on floating types use fminf/fmaxf, which return the
// other operand, so strata never hands NCCL a floating min or max: the NCCL
// level moves those bytes with NCCL and reduces them with strata's kernels
// (docs/GPU.md, "NaN"). Which results carry which NaN payload may differ
// between host and GPU (GPU arithmetic returns a canonical NaN); every rank
// still gets identical bits.
#pragma once

#include "strata/types.hpp"

namespace strata::plan {

inline bool floating(DataType dtype) {
  return dtype == DataType::f32 || dtype == DataType::f64 || dtype == DataType::f16 || dtype == DataType::bf16;
}

// Whether NCCL's own reduction for `op` on `dtype` gives strata's result
// (op != mean; mean runs as sum).
inline bool nccl_reduces(ReduceOp op, DataType dtype) {
  return !((op == ReduceOp::min || op == ReduceOp::max) && floating(dtype));
}

}  // namespace strata::plan
