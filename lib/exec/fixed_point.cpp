#include "exec/fixed_point.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>

#include "util/half.hpp"

namespace strata::exec::fixed_point {
namespace {

constexpr int kFractionBits = 40;
constexpr std::int64_t kNanCount = std::int64_t{1} << 42, kPlusInfCount = std::int64_t{1} << 21,
                       kMinusInfCount = 1;
constexpr std::int64_t kCountMask = (std::int64_t{1} << 21) - 1;

// Element i of `data` as a double (exact for every floating dtype).
double load(const void* data, std::size_t i, DataType dtype) {
  switch (dtype) {
    case DataType::f32: return static_cast<const float*>(data)[i];
    case DataType::f64: return static_cast<const double*>(data)[i];
    case DataType::f16: return util::f16_to_f32(static_cast<const std::uint16_t*>(data)[i]);
    case DataType::bf16: return util::bf16_to_f32(static_cast<const std::uint16_t*>(data)[i]);
    default: return 0;  // (integers never come here: their sums are exact already)
  }
}

// The binary exponent of a finite nonzero double: floor(log2 |x|).
int exponent_of(double x) {
  const auto bits = std::bit_cast<std::uint64_t>(x);
  const int field = static_cast<int>((bits >> 52) & 0x7ff);
  if (field != 0) return field - 1023;
  return std::ilogb(x);  // a subnormal double (only f64 inputs)
}

// The scale exponent E of an agreed code: every contribution has |x| < 2^(E + 1)
// (f32 and narrower: up to 2^(E + 2) at the top clamp, still far from overflow).
int scale_exponent(std::int8_t code, DataType dtype) { return dtype == DataType::f64 ? 16 * code + 15 : code; }

// x * 2^e as two multiplies, so that neither factor overflows a double;
// the factors of every code, one table per direction and scale rule, so
// that an element costs two multiplies rather than two ldexp calls.
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

const ScaleTable& table(DataType dtype) {
  static const auto make = [](DataType kind) {
    ScaleTable t;
    for (int code = -128; code <= 127; ++code) {
      const int e = scale_exponent(static_cast<std::int8_t>(code), kind);
      const int words_below = kind == DataType::f64 ? 2 : 1;
      t.to_fixed[code + 128] = factors(kFractionBits - e);
      t.from_fixed[code + 128] = factors(e - kFractionBits * words_below);
    }
    return t;
  };
  static const ScaleTable f64 = make(DataType::f64), narrower = make(DataType::f32);
  return dtype == DataType::f64 ? f64 : narrower;
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

void store(void* out, std::size_t i, DataType dtype, double v) {
  switch (dtype) {
    case DataType::f32: static_cast<float*>(out)[i] = static_cast<float>(v); return;
    case DataType::f64: static_cast<double*>(out)[i] = v; return;
    case DataType::f16: static_cast<std::uint16_t*>(out)[i] = util::f32_to_f16(to_float_odd(v)); return;
    case DataType::bf16: static_cast<std::uint16_t*>(out)[i] = util::f32_to_bf16(to_float_odd(v)); return;
    default: return;
  }
}

double non_finite_result(std::int64_t kinds) {
  const std::int64_t nans = (kinds >> 42) & kCountMask, plus = (kinds >> 21) & kCountMask,
                     minus = kinds & kCountMask;
  if (nans || (plus && minus)) return std::numeric_limits<double>::quiet_NaN();
  return plus ? std::numeric_limits<double>::infinity() : -std::numeric_limits<double>::infinity();
}

}  // namespace

std::size_t words(DataType dtype) { return dtype == DataType::f64 ? 2 : 1; }

void measure(const void* in, std::size_t count, DataType dtype, std::int8_t* codes) {
  for (std::size_t i = 0; i < count; ++i) {
    const double x = load(in, i, dtype);
    if (!std::isfinite(x)) {
      codes[i] = kNonFiniteCode;
    } else if (x == 0) {
      codes[i] = kZeroCode;
    } else {
      const int e = exponent_of(x);
      const int code = dtype == DataType::f64 ? (e >= 0 ? e / 16 : -((-e + 15) / 16)) : std::clamp(e, -128, 126);
      codes[i] = static_cast<std::int8_t>(code);
    }
  }
}

bool any_non_finite(const std::int8_t* codes, std::size_t count) {
  return std::find(codes, codes + count, kNonFiniteCode) != codes + count;
}

void encode(const void* in, std::size_t count, DataType dtype, const std::int8_t* codes, std::int64_t* fixed,
            std::int64_t* kinds) {
  const bool two_words = dtype == DataType::f64;
  const ScaleTable& scales = table(dtype);
  for (std::size_t i = 0; i < count; ++i) {
    const double x = load(in, i, dtype);
    std::int64_t* word = fixed + (two_words ? 2 * i : i);
    const std::int8_t code = codes[i];
    if (kinds) kinds[i] = std::isnan(x) ? kNanCount : std::isinf(x) ? (x > 0 ? kPlusInfCount : kMinusInfCount) : 0;
    if (code == kNonFiniteCode || code == kZeroCode || x == 0) {
      word[0] = 0;
      if (two_words) word[1] = 0;
      continue;
    }
    const double y = apply(x, scales.to_fixed[code + 128]);
    const std::int64_t high = round_to_int(y);
    word[0] = high;
    if (two_words) word[1] = round_to_int((y - static_cast<double>(high)) * 0x1p40);  // y - high is exact
  }
}

void decode(const std::int64_t* fixed, const std::int64_t* kinds, const std::int8_t* codes, std::size_t count,
            DataType dtype, std::size_t divisor, void* out) {
  const bool two_words = dtype == DataType::f64;
  const ScaleTable& scales = table(dtype);
  for (std::size_t i = 0; i < count; ++i) {
    const std::int8_t code = codes[i];
    double v = 0;
    if (code == kNonFiniteCode && kinds && kinds[i] != 0) {
      v = non_finite_result(kinds[i]);
    } else if (code != kZeroCode && code != kNonFiniteCode) {
      const Factors& back = scales.from_fixed[code + 128];
      if (two_words) {
        // high * 2^40 + low, rounded once (both terms are exact doubles).
        v = apply(static_cast<double>(fixed[2 * i]) * 0x1p40 + static_cast<double>(fixed[2 * i + 1]), back);
      } else {
        v = apply(static_cast<double>(fixed[i]), back);
      }
      if (divisor > 1) v /= static_cast<double>(divisor);
    }
    store(out, i, dtype, v == 0 ? 0.0 : v);
  }
}

}  // namespace strata::exec::fixed_point
