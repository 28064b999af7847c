// reduce_into runs the kernel reduce_simd.hpp chose for this CPU; mean's
// division (divide_by) is a loop of its own, once per call.
#include "host/reduce_kernel.hpp"

#include <cstdint>
#include <type_traits>

#include "host/reduce_loops.hpp"
#include "host/reduce_simd.hpp"

namespace strata::host {
namespace {

template <typename T>
void divide_native(void* data, std::size_t n, std::size_t divisor) {
  auto* p = static_cast<T*>(data);
  if constexpr (std::is_integral_v<T>) {
    // Integer division in C++ truncates toward zero, as promised. Divide in a
    // wide type so a divisor larger than T's range is not truncated first.
    using Wide = std::conditional_t<std::is_signed_v<T>, long long, unsigned long long>;
    for (std::size_t i = 0; i < n; ++i) p[i] = static_cast<T>(static_cast<Wide>(p[i]) / static_cast<Wide>(divisor));
  } else {
    const T d = static_cast<T>(divisor);
    for (std::size_t i = 0; i < n; ++i) p[i] = p[i] / d;
  }
}

template <typename Codec>
void divide_16(void* data, std::size_t n, std::size_t divisor) {
  auto* p = static_cast<std::uint16_t*>(data);
  const float d = static_cast<float>(divisor);
  for (std::size_t i = 0; i < n; ++i) p[i] = Codec::store(Codec::load(p[i]) / d);
}

}  // namespace

void reduce_into(void* dst, const void* a, const void* b, std::size_t count, DataType dtype, ReduceOp op) {
  static const simd::ReduceFn kernel = simd::chosen().reduce;
  kernel(dst, a, b, count, dtype, op);
}

void divide_by(void* data, std::size_t count, DataType dtype, std::size_t divisor) {
  switch (dtype) {
    case DataType::f32: return divide_native<float>(data, count, divisor);
    case DataType::f64: return divide_native<double>(data, count, divisor);
    case DataType::f16: return divide_16<loops::F16Codec>(data, count, divisor);
    case DataType::bf16: return divide_16<loops::BF16Codec>(data, count, divisor);
    case DataType::i8: return divide_native<std::int8_t>(data, count, divisor);
    case DataType::u8: return divide_native<std::uint8_t>(data, count, divisor);
    case DataType::i32: return divide_native<std::int32_t>(data, count, divisor);
    case DataType::u32: return divide_native<std::uint32_t>(data, count, divisor);
    case DataType::i64: return divide_native<std::int64_t>(data, count, divisor);
    case DataType::u64: return divide_native<std::uint64_t>(data, count, divisor);
  }
}

}  // namespace strata::host
