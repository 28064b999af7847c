// strata's dtypes and ops as NCCL's.
#pragma once

#include <nccl.h>

#include "strata/types.hpp"

namespace strata::nccl {

ncclDataType_t to_nccl(DataType dtype);

// NCCL's operator for `op` on `dtype` (mean: sum, the finish stage
// divides). Throws BackendError (an internal error) for an op NCCL does not
// reduce as strata does (floating min/max: plan::nccl_reduces).
ncclRedOp_t to_nccl(ReduceOp op, DataType dtype);

}  // namespace strata::nccl
