// Element-wise reduction kernels. One template per (storage type, op); the
// loops are simple enough for the compiler to vectorise at -O2/-O3.
#include "host/reduce_kernel.hpp"

#include <cstdint>
#include <type_traits>

#include "util/half.hpp"

namespace strata::host {
namespace {

struct F16Codec {
  static float load(std::uint16_t v) { return util::f16_to_f32(v); }
  static std::uint16_t store(float v) { return util::f32_to_f16(v); }
};
struct BF16Codec {
  static float load(std::uint16_t v) { return util::bf16_to_f32(v); }
  static std::uint16_t store(float v) { return util::f32_to_bf16(v); }
};

// The operators, on the type the arithmetic happens in. min/max let a NaN in
// either operand through, like fmin's opposite: a NaN gradient must not be
// hidden by a reduction.
template <typename T>
T apply(ReduceOp op, T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;  // wrap-around arithmetic, defined for signed types too
    switch (op) {
      case ReduceOp::sum: return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
      case ReduceOp::prod: return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
      case ReduceOp::min: return b < a ? b : a;
      case ReduceOp::max: return b > a ? b : a;
      default: return a;
    }
  } else {
    switch (op) {
      case ReduceOp::sum: return a + b;
      case ReduceOp::prod: return a * b;
      case ReduceOp::min: return (b < a || b != b) ? b : a;
      case ReduceOp::max: return (b > a || b != b) ? b : a;
      default: return a;
    }
  }
}

// Hoists the op switch out of the loop so each loop body is branch-free.
template <typename T, ReduceOp Op>
void loop(T* dst, const T* a, const T* b, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) dst[i] = apply<T>(Op, a[i], b[i]);
}

template <typename T>
void reduce_native(void* dst, const void* a, const void* b, std::size_t n, ReduceOp op) {
  auto* d = static_cast<T*>(dst);
  const auto* x = static_cast<const T*>(a);
  const auto* y = static_cast<const T*>(b);
  switch (op) {
    case ReduceOp::sum:
    case ReduceOp::mean: loop<T, ReduceOp::sum>(d, x, y, n); break;
    case ReduceOp::prod: loop<T, ReduceOp::prod>(d, x, y, n); break;
    case ReduceOp::min: loop<T, ReduceOp::min>(d, x, y, n); break;
    case ReduceOp::max: loop<T, ReduceOp::max>(d, x, y, n); break;
  }
}

template <typename Codec, ReduceOp Op>
void loop16(std::uint16_t* d, const std::uint16_t* x, const std::uint16_t* y, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) d[i] = Codec::store(apply<float>(Op, Codec::load(x[i]), Codec::load(y[i])));
}

template <typename Codec>
void reduce_16(void* dst, const void* a, const void* b, std::size_t n, ReduceOp op) {
  auto* d = static_cast<std::uint16_t*>(dst);
  const auto* x = static_cast<const std::uint16_t*>(a);
  const auto* y = static_cast<const std::uint16_t*>(b);
  switch (op) {
    case ReduceOp::sum:
    case ReduceOp::mean: loop16<Codec, ReduceOp::sum>(d, x, y, n); break;
    case ReduceOp::prod: loop16<Codec, ReduceOp::prod>(d, x, y, n); break;
    case ReduceOp::min: loop16<Codec, ReduceOp::min>(d, x, y, n); break;
    case ReduceOp::max: loop16<Codec, ReduceOp::max>(d, x, y, n); break;
  }
}

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
  switch (dtype) {
    case DataType::f32: return reduce_native<float>(dst, a, b, count, op);
    case DataType::f64: return reduce_native<double>(dst, a, b, count, op);
    case DataType::f16: return reduce_16<F16Codec>(dst, a, b, count, op);
    case DataType::bf16: return reduce_16<BF16Codec>(dst, a, b, count, op);
    case DataType::i8: return reduce_native<std::int8_t>(dst, a, b, count, op);
    case DataType::u8: return reduce_native<std::uint8_t>(dst, a, b, count, op);
    case DataType::i32: return reduce_native<std::int32_t>(dst, a, b, count, op);
    case DataType::u32: return reduce_native<std::uint32_t>(dst, a, b, count, op);
    case DataType::i64: return reduce_native<std::int64_t>(dst, a, b, count, op);
    case DataType::u64: return reduce_native<std::uint64_t>(dst, a, b, count, op);
  }
}

void divide_by(void* data, std::size_t count, DataType dtype, std::size_t divisor) {
  switch (dtype) {
    case DataType::f32: return divide_native<float>(data, count, divisor);
    case DataType::f64: return divide_native<double>(data, count, divisor);
    case DataType::f16: return divide_16<F16Codec>(data, count, divisor);
    case DataType::bf16: return divide_16<BF16Codec>(data, count, divisor);
    case DataType::i8: return divide_native<std::int8_t>(data, count, divisor);
    case DataType::u8: return divide_native<std::uint8_t>(data, count, divisor);
    case DataType::i32: return divide_native<std::int32_t>(data, count, divisor);
    case DataType::u32: return divide_native<std::uint32_t>(data, count, divisor);
    case DataType::i64: return divide_native<std::int64_t>(data, count, divisor);
    case DataType::u64: return divide_native<std::uint64_t>(data, count, divisor);
  }
}

}  // namespace strata::host
