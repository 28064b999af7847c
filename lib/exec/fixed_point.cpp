#include "exec/fixed_point.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "util/half.hpp"

namespace strata::exec::fixed_point {
namespace {

constexpr int kFractionBits = 40;
constexpr std::int64_t kNanCount = std::int64_t{1} << 42, kPlusInfCount = std::int64_t{1} << 21,
                       kMinusInfCount = 1;
constexpr std::int64_t kCountMask = (std::int64_t{1} << 21) - 1;

// f64's scale exponent E of an agreed code: every contribution has
// |x| < 2^(E + 1). (The narrow formats' E is the code itself.)
int f64_scale_exponent(std::int8_t code) { return 16 * code + 15; }

// x * 2^e as two multiplies, so that neither factor overflows a double;
// f64's factors for every code, one table per direction, so that an
// element costs two multiplies rather than two ldexp calls.
struct Factors {
  double first = 1, second = 1;
};
struct ScaleTable {
  Factors to_fixed[256], from_fixed[256];
};

Factors factors(int e) {
  const int half = e / 2;
  return {std::ldexp(1.0, half), std::ldexp(1.0, e - half)};
}

const ScaleTable& f64_table() {
  static const ScaleTable table = [] {
    ScaleTable t;
    for (int code = -128; code <= 127; ++code) {
      const int e = f64_scale_exponent(static_cast<std::int8_t>(code));
      t.to_fixed[code + 128] = factors(kFractionBits - e);
      t.from_fixed[code + 128] = factors(e - 2 * kFractionBits);
    }
    return t;
  }();
  return table;
}

double apply(double x, const Factors& f) { return (x * f.first) * f.second; }

// round-half-even(y) for |y| < 2^51, without a libm call.
std::int64_t round_to_int(double y) {
  constexpr double kMagic = 0x1.8p52;
  return std::bit_cast<std::int64_t>(y + kMagic) - std::bit_cast<std::int64_t>(kMagic);
}

// v rounded to float by truncation with the last bit set when inexact
// ("round to odd"): rounding that float once more to 16 bits gives v
// rounded once to 16 bits.
float to_float_odd(double v) {
  float f = static_cast<float>(v);
  if (static_cast<double>(f) == v || std::isinf(f)) return f;
  if (std::fabs(static_cast<double>(f)) > std::fabs(v)) f = std::nextafter(f, 0.0f);
  return std::bit_cast<float>(std::bit_cast<std::uint32_t>(f) | 1u);
}

double non_finite_result(std::int64_t kinds) {
  const std::int64_t nans = (kinds >> 42) & kCountMask, plus = (kinds >> 21) & kCountMask,
                     minus = kinds & kCountMask;
  if (nans || (plus && minus)) return std::numeric_limits<double>::quiet_NaN();
  return plus ? std::numeric_limits<double>::infinity() : -std::numeric_limits<double>::infinity();
}

// What the loops need of each dtype: its storage, its value as a double
// (exact for every floating dtype), a double stored rounded once.
struct F32 {
  using Stored = float;
  static constexpr bool f64 = false;
  static double load(Stored x) { return x; }
  static Stored store(double v) { return static_cast<float>(v); }
};
struct F64 {
  using Stored = double;
  static constexpr bool f64 = true;
  static double load(Stored x) { return x; }
  static Stored store(double v) { return v; }
};
struct F16 {
  using Stored = std::uint16_t;
  static constexpr bool f64 = false;
  static double load(Stored x) { return util::f16_to_f32(x); }
  static Stored store(double v) { return util::f32_to_f16(to_float_odd(v)); }
};
struct BF16 {
  using Stored = std::uint16_t;
  static constexpr bool f64 = false;
  static double load(Stored x) { return util::bf16_to_f32(x); }
  static Stored store(double v) { return util::f32_to_bf16(to_float_odd(v)); }
};

template <typename Format, typename Work>
void with_format(DataType dtype, Work&& work) {
  switch (dtype) {
    case DataType::f32: work(F32{}); return;
    case DataType::f64: work(F64{}); return;
    case DataType::f16: work(F16{}); return;
    case DataType::bf16: work(BF16{}); return;
    default: return;  // (integers never come here: their sums are exact already)
  }
}

// The scale code of an f64 value: its binary exponent from the bits (a
// subnormal counts as 2^-1023, still an upper bound) in steps of 16.
std::int8_t f64_code(double x) {
  const auto bits = std::bit_cast<std::uint64_t>(x);
  const int field = static_cast<int>((bits >> 52) & 0x7ff);
  const int e = field - 1023;
  const int code = e >= 0 ? e / 16 : -((-e + 15) / 16);
  const bool zero = (bits << 1) == 0;
  return static_cast<std::int8_t>(field == 0x7ff ? kNonFiniteCode : zero ? kZeroCode : code);
}

// 2^e as a double, from its bits (e within a normal double's range).
double power_of_two(int e) { return std::bit_cast<double>(static_cast<std::uint64_t>(e + 1023) << 52); }

// The scale code of a narrow format's value from its own bits: its binary
// exponent (a subnormal counts as the smallest normal's binade below,
// still an upper bound), clamped to [-128, 126].
template <typename Format>
std::int8_t narrow_code(typename Format::Stored x) {
  std::uint32_t bits = 0;
  int field = 0, all_ones = 0, bias = 0;
  if constexpr (std::is_same_v<Format, F16>) {
    bits = static_cast<std::uint32_t>(x) << 17;  // the sign shifted out
    field = static_cast<int>(bits >> 27);
    all_ones = 0x1f;
    bias = 15;
  } else {
    if constexpr (std::is_same_v<Format, F32>) bits = std::bit_cast<std::uint32_t>(x) << 1;
    else bits = static_cast<std::uint32_t>(x) << 17;
    field = static_cast<int>(bits >> 24);
    all_ones = 0xff;
    bias = 127;
  }
  const int e = std::min((field == 0 ? 1 : field) - bias - (field == 0 ? 1 : 0), 126);
  return static_cast<std::int8_t>(field == all_ones ? kNonFiniteCode : bits == 0 ? kZeroCode : std::max(e, -128));
}

}  // namespace

std::size_t words(DataType dtype) { return dtype == DataType::f64 ? 2 : 1; }

void measure(const void* in, std::size_t count, DataType dtype, std::int8_t* codes) {
  with_format<void>(dtype, [&](auto format) {
    using Format = decltype(format);
    const auto* x = static_cast<const typename Format::Stored*>(in);
    if constexpr (Format::f64)
      for (std::size_t i = 0; i < count; ++i) codes[i] = f64_code(x[i]);
    else
      for (std::size_t i = 0; i < count; ++i) codes[i] = narrow_code<Format>(x[i]);
  });
}

bool any_non_finite(const std::int8_t* codes, std::size_t count) {
  return std::find(codes, codes + count, kNonFiniteCode) != codes + count;
}

void encode(const void* in, std::size_t count, DataType dtype, const std::int8_t* codes, std::int64_t* fixed,
            std::int64_t* kinds) {
  with_format<void>(dtype, [&](auto format) {
    using Format = decltype(format);
    const auto* x = static_cast<const typename Format::Stored*>(in);
    const ScaleTable& scales = f64_table();
    for (std::size_t i = 0; i < count; ++i) {
      const double v = Format::load(x[i]);
      const int code = codes[i];
      // A value whose element holds an infinity or NaN somewhere counts 0
      // (its result comes from the kinds); a zero code means every rank's is 0.
      const bool counted = code != kNonFiniteCode && code != kZeroCode;
      double y = 0;
      if constexpr (Format::f64) y = counted ? apply(v, scales.to_fixed[code + 128]) : 0.0;
      else y = counted ? v * power_of_two(kFractionBits - code) : 0.0;  // (one factor suffices: code <= 126)
      const std::int64_t high = round_to_int(y);
      if constexpr (Format::f64) {
        fixed[2 * i] = high;
        fixed[2 * i + 1] = round_to_int((y - static_cast<double>(high)) * 0x1p40);  // y - high is exact
      } else {
        fixed[i] = high;
      }
    }
    if (kinds)
      for (std::size_t i = 0; i < count; ++i) {
        const double v = Format::load(x[i]);
        kinds[i] = std::isnan(v) ? kNanCount : std::isinf(v) ? (v > 0 ? kPlusInfCount : kMinusInfCount) : 0;
      }
  });
}

void decode(const std::int64_t* fixed, const std::int64_t* kinds, const std::int8_t* codes, std::size_t count,
            DataType dtype, std::size_t divisor, void* out) {
  with_format<void>(dtype, [&](auto format) {
    using Format = decltype(format);
    auto* result = static_cast<typename Format::Stored*>(out);
    const ScaleTable& scales = f64_table();
    const double d = static_cast<double>(divisor);
    for (std::size_t i = 0; i < count; ++i) {
      double v = 0;  // +0 for a zero sum (a zero code's words are all 0)
      if constexpr (Format::f64) {
        // high * 2^40 + low, rounded once (both terms are exact doubles).
        const double sum = static_cast<double>(fixed[2 * i]) * 0x1p40 + static_cast<double>(fixed[2 * i + 1]);
        v = apply(sum, scales.from_fixed[codes[i] + 128]);
      } else {
        v = static_cast<double>(fixed[i]) * power_of_two(codes[i] - kFractionBits);
      }
      if (divisor > 1) v /= d;
      result[i] = Format::store(v);
    }
    if (kinds)
      for (std::size_t i = 0; i < count; ++i)
        if (codes[i] == kNonFiniteCode && kinds[i] != 0) result[i] = Format::store(non_finite_result(kinds[i]));
  });
}

}  // namespace strata::exec::fixed_point
