#include "gpu/rank_order.hpp"

namespace strata::gpu {

void reduce_in_rank_order(Backend& backend, void* acc, const std::byte* contributions, std::size_t slice_bytes,
                          int size, std::size_t count, DataType dtype, ReduceOp op) {
  if (size == 1) {
    backend.copy(acc, contributions, slice_bytes, Copy::device_to_device);
    return;
  }
  backend.reduce(acc, contributions, contributions + slice_bytes, count, dtype, op);
  for (int r = 2; r < size; ++r)
    backend.reduce(acc, acc, contributions + std::size_t(r) * slice_bytes, count, dtype, op);
}

}  // namespace strata::gpu
