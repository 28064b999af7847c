// The element-wise loops behind host::reduce_into and divide_by, written once and
// inlined into each of reduce_simd.cpp's kernels (one per instruction set,
// each a function with its own target attribute). Everything here is
// always_inline so that each kernel's copy is vectorised for its
// instruction set; the translation unit itself is compiled for the
// baseline, so whatever the compiler does not inline (util/half.hpp's
// conversions, say) runs as baseline code on every CPU.
//
// Every loop computes each element on its own, with the element type's
// exactly rounded operations (no reassociation, no fused multiply-add), so
// every kernel gives the same bits as every other (tests/unit/
// test_reduce_kernel.cpp checks that against the baseline kernel).
// Internal to lib/host/reduce_simd.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "strata/types.hpp"
#include "util/half.hpp"

namespace strata::host::loops {

#define STRATA_ALWAYS_INLINE [[gnu::always_inline]] inline

struct F16Codec {
  STRATA_ALWAYS_INLINE static float load(std::uint16_t v) { return util::f16_to_f32(v); }
  STRATA_ALWAYS_INLINE static std::uint16_t store(float v) { return util::f32_to_f16(v); }
};
struct BF16Codec {
  STRATA_ALWAYS_INLINE static float load(std::uint16_t v) { return util::bf16_to_f32(v); }
  STRATA_ALWAYS_INLINE static std::uint16_t store(float v) { return util::f32_to_bf16(v); }
};

// The operators, on the type the arithmetic happens in. min/max let a NaN in
// either operand through, like fmin's opposite: a NaN gradient must not be
// hidden by a reduction.
template <typename T>
STRATA_ALWAYS_INLINE T apply(ReduceOp op, T a, T b) {
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

// How an element is kept (Stored) and the type its arithmetic happens in
// (Math): native types as they are; f16 and bf16 in f32, rounded once
// (F16Codec, BF16Codec).
template <typename T>
struct NativeCodec {
  STRATA_ALWAYS_INLINE static T load(T v) { return v; }
  STRATA_ALWAYS_INLINE static T store(T v) { return v; }
};

// Hoists the op switch out of the loop so each loop body is branch-free.
template <typename Stored, typename Math, typename Codec, ReduceOp Op>
STRATA_ALWAYS_INLINE void loop(Stored* d, const Stored* x, const Stored* y, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) d[i] = Codec::store(apply<Math>(Op, Codec::load(x[i]), Codec::load(y[i])));
}

template <typename Stored, typename Math, typename Codec>
STRATA_ALWAYS_INLINE void reduce_with(void* dst, const void* a, const void* b, std::size_t n, ReduceOp op) {
  auto* d = static_cast<Stored*>(dst);
  const auto* x = static_cast<const Stored*>(a);
  const auto* y = static_cast<const Stored*>(b);
  switch (op) {
    case ReduceOp::sum:
    case ReduceOp::mean: loop<Stored, Math, Codec, ReduceOp::sum>(d, x, y, n); break;
    case ReduceOp::prod: loop<Stored, Math, Codec, ReduceOp::prod>(d, x, y, n); break;
    case ReduceOp::min: loop<Stored, Math, Codec, ReduceOp::min>(d, x, y, n); break;
    case ReduceOp::max: loop<Stored, Math, Codec, ReduceOp::max>(d, x, y, n); break;
  }
}

template <typename T>
STRATA_ALWAYS_INLINE void reduce_native(void* dst, const void* a, const void* b, std::size_t n, ReduceOp op) {
  reduce_with<T, T, NativeCodec<T>>(dst, a, b, n, op);
}

template <typename Codec>
STRATA_ALWAYS_INLINE void reduce_16(void* dst, const void* a, const void* b, std::size_t n, ReduceOp op) {
  reduce_with<std::uint16_t, float, Codec>(dst, a, b, n, op);
}

// host::reduce_into's contract (reduce_kernel.hpp), every dtype.
STRATA_ALWAYS_INLINE void reduce_any(void* dst, const void* a, const void* b, std::size_t count, DataType dtype,
                                     ReduceOp op) {
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

// mean's finish, host::divide_by's contract (reduce_kernel.hpp). Floating
// point: a power-of-two divisor multiplies by its reciprocal instead, which
// is exact, so both round the same real number x / 2^k once and give the
// same bits (NaN, infinities, zeros and subnormals included), while a
// multiply costs a fraction of a divide.
template <typename T>
STRATA_ALWAYS_INLINE void divide_native(void* data, std::size_t n, std::size_t divisor) {
  auto* p = static_cast<T*>(data);
  if constexpr (std::is_integral_v<T>) {
    // Integer division in C++ truncates toward zero, as promised. Divide in a
    // wide type so a divisor larger than T's range is not truncated first.
    using Wide = std::conditional_t<std::is_signed_v<T>, long long, unsigned long long>;
    for (std::size_t i = 0; i < n; ++i) p[i] = static_cast<T>(static_cast<Wide>(p[i]) / static_cast<Wide>(divisor));
  } else if ((divisor & (divisor - 1)) == 0) {
    const T reciprocal = T(1) / static_cast<T>(divisor);
    for (std::size_t i = 0; i < n; ++i) p[i] = p[i] * reciprocal;
  } else {
    const T d = static_cast<T>(divisor);
    for (std::size_t i = 0; i < n; ++i) p[i] = p[i] / d;
  }
}

// f16 and bf16: in f32, rounded once.
template <typename Codec>
STRATA_ALWAYS_INLINE void divide_16(void* data, std::size_t n, std::size_t divisor) {
  auto* p = static_cast<std::uint16_t*>(data);
  if ((divisor & (divisor - 1)) == 0) {
    const float reciprocal = 1.0f / static_cast<float>(divisor);
    for (std::size_t i = 0; i < n; ++i) p[i] = Codec::store(Codec::load(p[i]) * reciprocal);
  } else {
    const float d = static_cast<float>(divisor);
    for (std::size_t i = 0; i < n; ++i) p[i] = Codec::store(Codec::load(p[i]) / d);
  }
}

STRATA_ALWAYS_INLINE void divide_any(void* data, std::size_t count, DataType dtype, std::size_t divisor) {
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

#undef STRATA_ALWAYS_INLINE

}  // namespace strata::host::loops
