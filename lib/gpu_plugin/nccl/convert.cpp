#include "gpu_plugin/nccl/convert.hpp"

#include "plan/nan.hpp"
#include "strata/errors.hpp"
#include "util/where.hpp"

namespace strata::nccl {

ncclDataType_t to_nccl(DataType dtype) {
  switch (dtype) {
    case DataType::f32: return ncclFloat32;
    case DataType::f64: return ncclFloat64;
    case DataType::f16: return ncclFloat16;
    case DataType::bf16: return ncclBfloat16;
    case DataType::i8: return ncclInt8;
    case DataType::u8: return ncclUint8;
    case DataType::i32: return ncclInt32;
    case DataType::u32: return ncclUint32;
    case DataType::i64: return ncclInt64;
    case DataType::u64: return ncclUint64;
  }
  return ncclFloat32;
}

ncclRedOp_t to_nccl(ReduceOp op, DataType dtype) {
  if (!plan::nccl_reduces(op, dtype))
    throw BackendError(util::located("internal error: a floating min/max reached NCCL's own reduction (it drops NaN)"),
                       "NCCL", 0, util::hostname(), util::world_rank());
  switch (op) {
    case ReduceOp::sum:
    case ReduceOp::mean: return ncclSum;  // mean: sum here, the finish stage divides (integers truncate)
    case ReduceOp::prod: return ncclProd;
    case ReduceOp::min: return ncclMin;
    case ReduceOp::max: return ncclMax;
  }
  return ncclSum;
}

}  // namespace strata::nccl
