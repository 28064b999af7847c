// reduce_into and divide_by run the kernel reduce_simd.hpp chose for this
// CPU.
#include "host/reduce_kernel.hpp"

#include "host/reduce_simd.hpp"

namespace strata::host {

void reduce_into(void* dst, const void* a, const void* b, std::size_t count, DataType dtype, ReduceOp op) {
  simd::chosen().reduce(dst, a, b, count, dtype, op);
}

void divide_by(void* data, std::size_t count, DataType dtype, std::size_t divisor) {
  simd::chosen().divide(data, count, dtype, divisor);
}

}  // namespace strata::host
