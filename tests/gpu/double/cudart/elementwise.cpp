#include "elementwise.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "host/reduce_kernel.hpp"
#include "util/half.hpp"

namespace gpu_double {
namespace {

using strata::DataType;
using strata::ReduceOp;

// How the comparisons of min/max see an element.
template <typename S>
struct Plain {
  static S value(S v) { return v; }
};
struct F16 {
  static float value(std::uint16_t v) { return strata::util::f16_to_f32(v); }
};
struct BF16 {
  static float value(std::uint16_t v) { return strata::util::bf16_to_f32(v); }
};

template <typename S, typename View>
void select(S* dst, const S* a, const S* b, std::size_t count, bool min, Semantics semantics) {
  for (std::size_t i = 0; i < count; ++i) {
    const auto x = View::value(a[i]), y = View::value(b[i]);
    bool take_b = min ? y < x : y > x;
    if constexpr (!std::is_integral_v<decltype(x)>) {
      if (semantics == Semantics::strata_kernel) take_b = take_b || y != y;  // a NaN wins
      else take_b = x != x ? true : (y != y ? false : take_b);              // a NaN is dropped
    }
    dst[i] = take_b ? b[i] : a[i];
  }
}

template <typename S, typename View>
void select_in(void* dst, const void* a, const void* b, std::size_t count, bool min, Semantics semantics) {
  select<S, View>(static_cast<S*>(dst), static_cast<const S*>(a), static_cast<const S*>(b), count, min, semantics);
}

// Arithmetic on a GPU returns one canonical NaN whatever the operands held.
template <typename Bits>
void canonical_nan(void* data, std::size_t count, Bits exponent, Bits mantissa, Bits canonical) {
  auto* p = static_cast<Bits*>(data);
  for (std::size_t i = 0; i < count; ++i)
    if ((p[i] & exponent) == exponent && (p[i] & mantissa) != 0) p[i] = canonical;
}

}  // namespace

std::size_t element_bytes(DataType dtype) {
  switch (dtype) {
    case DataType::f64: case DataType::i64: case DataType::u64: return 8;
    case DataType::f32: case DataType::i32: case DataType::u32: return 4;
    case DataType::f16: case DataType::bf16: return 2;
    case DataType::i8: case DataType::u8: return 1;
  }
  return 1;
}

void combine(void* dst, const void* a, const void* b, std::size_t count, DataType dtype, ReduceOp op,
             Semantics semantics) {
  if (op == ReduceOp::min || op == ReduceOp::max) {
    const bool min = op == ReduceOp::min;
    switch (dtype) {
      case DataType::f32: return select_in<float, Plain<float>>(dst, a, b, count, min, semantics);
      case DataType::f64: return select_in<double, Plain<double>>(dst, a, b, count, min, semantics);
      case DataType::f16: return select_in<std::uint16_t, F16>(dst, a, b, count, min, semantics);
      case DataType::bf16: return select_in<std::uint16_t, BF16>(dst, a, b, count, min, semantics);
      case DataType::i8: return select_in<std::int8_t, Plain<std::int8_t>>(dst, a, b, count, min, semantics);
      case DataType::u8: return select_in<std::uint8_t, Plain<std::uint8_t>>(dst, a, b, count, min, semantics);
      case DataType::i32: return select_in<std::int32_t, Plain<std::int32_t>>(dst, a, b, count, min, semantics);
      case DataType::u32: return select_in<std::uint32_t, Plain<std::uint32_t>>(dst, a, b, count, min, semantics);
      case DataType::i64: return select_in<std::int64_t, Plain<std::int64_t>>(dst, a, b, count, min, semantics);
      case DataType::u64: return select_in<std::uint64_t, Plain<std::uint64_t>>(dst, a, b, count, min, semantics);
    }
    return;
  }
  strata::host::reduce_into(dst, a, b, count, dtype, op);
  switch (dtype) {
    case DataType::f32: return canonical_nan<std::uint32_t>(dst, count, 0x7f800000u, 0x007fffffu, 0x7fffffffu);
    case DataType::f64:
      return canonical_nan<std::uint64_t>(dst, count, 0x7ff0000000000000ull, 0x000fffffffffffffull,
                                          0x7fffffffffffffffull);
    case DataType::f16: return canonical_nan<std::uint16_t>(dst, count, 0x7c00, 0x03ff, 0x7fff);
    case DataType::bf16: return canonical_nan<std::uint16_t>(dst, count, 0x7f80, 0x007f, 0x7fff);
    default: return;
  }
}

void divide(void* data, std::size_t count, DataType dtype, std::size_t divisor) {
  strata::host::divide_by(data, count, dtype, divisor);
}

}  // namespace gpu_double
