#include "exec/fixed_point.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "host/reduce_simd.hpp"
#include "util/half.hpp"

namespace strata::exec::fixed_point {
namespace {

// Every helper below is inlined into each instruction set's copy of the
// loops (the end of this file), so that each copy is vectorised for its
// own: no libm calls, no int64 -> double conversion AVX2 lacks, only
// integer and exactly rounded IEEE operations, so every copy gives the
// same bits.
#define STRATA_INLINE [[gnu::always_inline]] inline

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

STRATA_INLINE double apply(double x, const Factors& f) { return (x * f.first) * f.second; }

// round-half-even(y) for |y| < 2^51, without a libm call.
// (Adding 1.5 * 2^52 puts the integer part of |y| < 2^51 in the low mantissa
// bits, rounded half to even.)
constexpr double kRoundingMagic = 0x1.8p52;
STRATA_INLINE std::int64_t round_to_int(double y) {
  return std::bit_cast<std::int64_t>(y + kRoundingMagic) - std::bit_cast<std::int64_t>(kRoundingMagic);
}

// v rounded to float by truncation with the last bit set when inexact
// ("round to odd"): rounding that float once more to 16 bits gives v
// rounded once to 16 bits.
STRATA_INLINE float to_float_odd(double v) {
  const float f = static_cast<float>(v);
  const double back = static_cast<double>(f);
  std::uint32_t bits = std::bit_cast<std::uint32_t>(f);
  const bool exact = back == v || (bits & 0x7fffffffu) == 0x7f800000u;  // (an infinity stays one)
  // Rounded away from zero: one step back toward it (f is not 0 then).
  const bool away = (back < 0 ? -back : back) > (v < 0 ? -v : v);
  bits -= away ? 1u : 0u;
  return exact ? f : std::bit_cast<float>(bits | 1u);
}

// x as the nearest double, rounded once, for any int64 (AVX2 has no such
// conversion): the high 32 bits and the low 32 bits each placed exactly
// in a double's mantissa, then added.
STRATA_INLINE double to_double(std::int64_t x) {
  const auto u = static_cast<std::uint64_t>(x);
  // 2^52 + low half; 2^84 + 2^63 + high half (signed) * 2^32, less 2^84 + 2^63 + 2^52 (exact).
  const double low = std::bit_cast<double>(0x4330000000000000ULL | (u & 0xffffffffULL));
  const double high = std::bit_cast<double>((u >> 32) ^ 0x4530000080000000ULL) - 0x1.00000801p84;
  return high + low;  // the only rounding
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
  STRATA_INLINE static double load(Stored x) { return x; }
  STRATA_INLINE static Stored store(double v) { return static_cast<float>(v); }
};
struct F64 {
  using Stored = double;
  static constexpr bool f64 = true;
  STRATA_INLINE static double load(Stored x) { return x; }
  STRATA_INLINE static Stored store(double v) { return v; }
};
struct F16 {
  using Stored = std::uint16_t;
  static constexpr bool f64 = false;
  STRATA_INLINE static double load(Stored x) { return util::f16_to_f32(x); }
  STRATA_INLINE static Stored store(double v) { return util::f32_to_f16(to_float_odd(v)); }
};
struct BF16 {
  using Stored = std::uint16_t;
  static constexpr bool f64 = false;
  STRATA_INLINE static double load(Stored x) { return util::bf16_to_f32(x); }
  STRATA_INLINE static Stored store(double v) { return util::f32_to_bf16(to_float_odd(v)); }
};

// The scale code of an f64 value: its binary exponent from the bits (a
// subnormal counts as 2^-1023, still an upper bound) in steps of 16.
STRATA_INLINE std::int8_t f64_code(double x) {
  const auto bits = std::bit_cast<std::uint64_t>(x);
  const int field = static_cast<int>((bits >> 52) & 0x7ff);
  const int e = field - 1023;
  const int code = e >= 0 ? e / 16 : -((-e + 15) / 16);
  const bool zero = (bits << 1) == 0;
  return static_cast<std::int8_t>(field == 0x7ff ? kNonFiniteCode : zero ? kZeroCode : code);
}

// 2^e as a double, from its bits (e within a normal double's range).
STRATA_INLINE double power_of_two(int e) { return std::bit_cast<double>(static_cast<std::uint64_t>(e + 1023) << 52); }

// The scale code of a narrow format's value from its own bits: its binary
// exponent (a subnormal counts as the smallest normal's binade below,
// still an upper bound), clamped to [-128, 126].
template <typename Format>
STRATA_INLINE std::int8_t narrow_code(typename Format::Stored x) {
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

// ---- the loops, one copy per instruction set ------------------------------

template <bool kAdd>
STRATA_INLINE void put(std::int64_t& word, std::int64_t value) {
  if constexpr (kAdd)
    word = static_cast<std::int64_t>(static_cast<std::uint64_t>(word) + static_cast<std::uint64_t>(value));
  else
    word = value;
}

template <typename Format>
STRATA_INLINE void measure_loop(const void* in, std::size_t count, std::int8_t* codes) {
  const auto* x = static_cast<const typename Format::Stored*>(in);
  if constexpr (Format::f64)
    for (std::size_t i = 0; i < count; ++i) codes[i] = f64_code(x[i]);
  else
    for (std::size_t i = 0; i < count; ++i) codes[i] = narrow_code<Format>(x[i]);
}

// kAdd: add each word and kind count to what `fixed` and `kinds` hold
// (wrapping, as the collectives' integer sums) instead of storing it.
template <typename Format, bool kAdd = false>
STRATA_INLINE void encode_loop(const void* in, std::size_t count, const std::int8_t* codes, std::int64_t* fixed,
                               std::int64_t* kinds) {
  const auto* x = static_cast<const typename Format::Stored*>(in);
  const ScaleTable& scales = f64_table();
  for (std::size_t i = 0; i < count; ++i) {
    const double v = Format::load(x[i]);
    const int code = codes[i];
    // A value whose element holds an infinity or NaN somewhere counts 0
    // (its result comes from the kinds); a zero code means every rank's is 0.
    // (Selected after the arithmetic, not branched around it, so that
    // the loop vectorises: an uncounted value's y may be anything.)
    const bool counted = code != kNonFiniteCode && code != kZeroCode;
    if constexpr (Format::f64) {
      const double y = apply(v, scales.to_fixed[code + 128]);
      const std::int64_t high = round_to_int(y);
      const std::int64_t low = round_to_int((y - to_double(high)) * 0x1p40);  // y - high is exact
      put<kAdd>(fixed[2 * i], counted ? high : 0);
      put<kAdd>(fixed[2 * i + 1], counted ? low : 0);
    } else {
      const double y = v * power_of_two(kFractionBits - code);  // (one factor suffices: code <= 126)
      put<kAdd>(fixed[i], round_to_int(y) & -static_cast<std::int64_t>(counted));
    }
  }
  if (kinds)
    for (std::size_t i = 0; i < count; ++i) {
      const double v = Format::load(x[i]);
      put<kAdd>(kinds[i], v != v ? kNanCount : v == std::numeric_limits<double>::infinity() ? kPlusInfCount
                                             : v == -std::numeric_limits<double>::infinity() ? kMinusInfCount
                                                                                              : 0);
    }
}

template <typename Format>
STRATA_INLINE void decode_loop(const std::int64_t* fixed, const std::int64_t* kinds, const std::int8_t* codes,
                               std::size_t count, std::size_t divisor, void* out) {
  auto* result = static_cast<typename Format::Stored*>(out);
  const ScaleTable& scales = f64_table();
  const double d = static_cast<double>(divisor);
  for (std::size_t i = 0; i < count; ++i) {
    double v = 0;  // +0 for a zero sum (a zero code's words are all 0)
    if constexpr (Format::f64) {
      // high * 2^40 + low, rounded once (both terms are exact doubles).
      const double sum = to_double(fixed[2 * i]) * 0x1p40 + to_double(fixed[2 * i + 1]);
      v = apply(sum, scales.from_fixed[codes[i] + 128]);
    } else {
      v = to_double(fixed[i]) * power_of_two(codes[i] - kFractionBits);
    }
    result[i] = Format::store(divisor > 1 ? v / d : v);
  }
  if (kinds)
    for (std::size_t i = 0; i < count; ++i)
      if (codes[i] == kNonFiniteCode && kinds[i] != 0) result[i] = Format::store(non_finite_result(kinds[i]));
}

// A narrow format's word is an integer of magnitude at most 2^42 (below
// 2^(E + 1) times 2^(40 - E), rounded; 2^42 where f32's code is clamped
// at 126), so the sum of up to 2^11 of them is an integer of at most 2^53:
// doubles hold every partial sum exactly, and the words' double sum is
// to_double of their int64 sum. That lets the gathered sum skip the int64
// words (and AVX2's slow conversions).
constexpr int kMostDoubleSumOperands = 1 << 11;

// Elements per step of the gathered sum: its codes, words and kind counts
// stay in the L1 cache between the loops over the operands.
constexpr std::size_t kGatheredStep = 512;

// round_to_int(y) as a double: the same integer.
STRATA_INLINE double round_to_integral(double y) { return (y + kRoundingMagic) - kRoundingMagic; }

// A narrow value's word at scale `scale`, as a double (encode_loop's, exactly).
STRATA_INLINE double word_of(double x, std::int32_t scale) {
  return round_to_integral(x * power_of_two(kFractionBits - scale));
}

// The words' sum at scale `scale` as the element's value, divided by `d`
// (`divisor` as a double) for a mean: decode_loop's, before its store.
STRATA_INLINE double value_of(double sum, std::int32_t scale, std::size_t divisor, double d) {
  const double v = sum * power_of_two(scale - kFractionBits);
  return divisor > 1 ? v / d : v;
}

// f32's scale from its largest contribution's magnitude bits (as narrow_code<F32>).
STRATA_INLINE std::int32_t f32_scale(std::uint32_t magnitude) {
  const auto field = static_cast<std::int32_t>(magnitude >> 23);
  return std::min(field == 0 ? -127 : field - 127, 126);
}

// The narrow formats' gathered sum of k elements from `at`, each
// element's agreed scale E in scales[i] (its code), every contribution
// finite: encode, the sum and decode as decode_loop computes them, in
// double (kMostDoubleSumOperands says why that is exact).
template <typename Format>
STRATA_INLINE void double_sum_loop(const void* const* operands, int n, std::size_t at, std::size_t k,
                                   const std::int32_t* scales, std::size_t divisor, typename Format::Stored* out) {
  using Stored = typename Format::Stored;
  alignas(64) double sum[kGatheredStep];
  const auto operand = [&](int r) { return static_cast<const Stored*>(operands[r]) + at; };
  const Stored* first = operand(0);
  for (std::size_t i = 0; i < k; ++i) sum[i] = word_of(Format::load(first[i]), scales[i]);
  for (int r = 1; r < n; ++r) {
    const Stored* x = operand(r);
    for (std::size_t i = 0; i < k; ++i) sum[i] += word_of(Format::load(x[i]), scales[i]);
  }
  const double d = static_cast<double>(divisor);
  // (A zero code's contributions are all zeros: their sum is +0 at any scale.)
  for (std::size_t i = 0; i < k; ++i) out[i] = Format::store(value_of(sum[i], scales[i], divisor, d));
}

// f32's agreed scales of k elements from `at`, from the bits of each
// element's largest magnitude: a code never falls as the magnitude grows,
// so the codes' maximum is the largest magnitude's code (all zeros give
// -127 here, not kZeroCode: their sum is +0 at either scale). False where
// some contribution is an infinity or NaN (the scales are then unset).
STRATA_INLINE bool f32_scales(const void* const* operands, int n, std::size_t at, std::size_t k,
                              std::int32_t* scales) {
  alignas(64) std::uint32_t top[kGatheredStep];
  const auto operand = [&](int r) { return static_cast<const float*>(operands[r]) + at; };
  const float* first = operand(0);
  for (std::size_t i = 0; i < k; ++i) top[i] = std::bit_cast<std::uint32_t>(first[i]) & 0x7fffffffu;
  for (int r = 1; r < n; ++r) {
    const float* x = operand(r);
    for (std::size_t i = 0; i < k; ++i) top[i] = std::max(top[i], std::bit_cast<std::uint32_t>(x[i]) & 0x7fffffffu);
  }
  std::uint32_t largest = 0;
  for (std::size_t i = 0; i < k; ++i) largest = std::max(largest, top[i]);
  if (largest >= 0x7f800000u) return false;
  for (std::size_t i = 0; i < k; ++i) scales[i] = f32_scale(top[i]);
  return true;
}

// f32_scales and double_sum_loop in one pass for two operands (a node of
// two ranks): each element's scale, two words and their sum stay in
// registers. False, writing nothing, where some contribution is an
// infinity or NaN. The results go through `staged` (k floats), so that
// `out` may be an operand and the loop still vectorises.
STRATA_INLINE bool f32_pair_sum(const float* a, const float* b, std::size_t k, std::size_t divisor, float* staged,
                                float* out) {
  const auto magnitude = [](float x) { return std::bit_cast<std::uint32_t>(x) & 0x7fffffffu; };
  std::uint32_t largest = 0;
  for (std::size_t i = 0; i < k; ++i) largest = std::max(largest, std::max(magnitude(a[i]), magnitude(b[i])));
  if (largest >= 0x7f800000u) return false;
  const double d = static_cast<double>(divisor);
  for (std::size_t i = 0; i < k; ++i) {
    const std::int32_t scale = f32_scale(std::max(magnitude(a[i]), magnitude(b[i])));
    const double sum = word_of(a[i], scale) + word_of(b[i], scale);
    staged[i] = static_cast<float>(value_of(sum, scale, divisor, d));
  }
  std::memcpy(out, staged, k * sizeof(float));
  return true;
}

// out[i] = the exact sum of operands[0..n)[i]: the three steps of the
// collective form (measure, agree, encode and sum, decode) on one rank
// that holds every contribution, with the same loops, so the same bits.
template <typename Format>
STRATA_INLINE void sum_gathered_loop(const void* const* operands, int n, std::size_t count, std::size_t divisor,
                                     void* out) {
  using Stored = typename Format::Stored;
  constexpr std::size_t kWords = Format::f64 ? 2 : 1;
  alignas(64) std::int8_t codes[kGatheredStep], mine[kGatheredStep];
  alignas(64) std::int64_t fixed[kGatheredStep * kWords], kinds[kGatheredStep];
  alignas(64) std::int32_t scales[kGatheredStep];
  alignas(64) float staged[kGatheredStep];
  for (std::size_t at = 0; at < count; at += kGatheredStep) {
    const std::size_t k = std::min(kGatheredStep, count - at);
    const auto operand = [&](int r) { return static_cast<const Stored*>(operands[r]) + at; };
    if constexpr (std::is_same_v<Format, F32>) {
      if (n == 2 && f32_pair_sum(operand(0), operand(1), k, divisor, staged, static_cast<float*>(out) + at)) continue;
      if (n <= kMostDoubleSumOperands && f32_scales(operands, n, at, k, scales)) {
        double_sum_loop<Format>(operands, n, at, k, scales, divisor, static_cast<Stored*>(out) + at);
        continue;
      }
    }
    measure_loop<Format>(operand(0), k, codes);
    for (int r = 1; r < n; ++r) {
      measure_loop<Format>(operand(r), k, mine);
      for (std::size_t i = 0; i < k; ++i) codes[i] = std::max(codes[i], mine[i]);
    }
    const bool non_finite = std::memchr(codes, static_cast<unsigned char>(kNonFiniteCode), k) != nullptr;
    if constexpr (!Format::f64) {
      if (!non_finite && n <= kMostDoubleSumOperands) {
        for (std::size_t i = 0; i < k; ++i) scales[i] = codes[i];
        double_sum_loop<Format>(operands, n, at, k, scales, divisor, static_cast<Stored*>(out) + at);
        continue;
      }
    }
    std::int64_t* kind_counts = non_finite ? kinds : nullptr;
    encode_loop<Format>(operand(0), k, codes, fixed, kind_counts);
    for (int r = 1; r < n; ++r) encode_loop<Format, true>(operand(r), k, codes, fixed, kind_counts);
    decode_loop<Format>(fixed, kind_counts, codes, k, divisor, static_cast<Stored*>(out) + at);
  }
}

// One instruction set's copy of the three loops, for each floating dtype
// (integers never come here: their sums are exact already).
#define STRATA_FIXED_POINT_KERNELS(isa, target)                                                                    \
  target void measure_##isa(const void* in, std::size_t count, DataType dtype, std::int8_t* codes) {              \
    switch (dtype) {                                                                                               \
      case DataType::f32: measure_loop<F32>(in, count, codes); return;                                             \
      case DataType::f64: measure_loop<F64>(in, count, codes); return;                                             \
      case DataType::f16: measure_loop<F16>(in, count, codes); return;                                             \
      case DataType::bf16: measure_loop<BF16>(in, count, codes); return;                                           \
      default: return;                                                                                             \
    }                                                                                                              \
  }                                                                                                                \
  target void encode_##isa(const void* in, std::size_t count, DataType dtype, const std::int8_t* codes,            \
                           std::int64_t* fixed, std::int64_t* kinds) {                                             \
    switch (dtype) {                                                                                               \
      case DataType::f32: encode_loop<F32>(in, count, codes, fixed, kinds); return;                                \
      case DataType::f64: encode_loop<F64>(in, count, codes, fixed, kinds); return;                                \
      case DataType::f16: encode_loop<F16>(in, count, codes, fixed, kinds); return;                                \
      case DataType::bf16: encode_loop<BF16>(in, count, codes, fixed, kinds); return;                              \
      default: return;                                                                                             \
    }                                                                                                              \
  }                                                                                                                \
  target void decode_##isa(const std::int64_t* fixed, const std::int64_t* kinds, const std::int8_t* codes,         \
                           std::size_t count, DataType dtype, std::size_t divisor, void* out) {                    \
    switch (dtype) {                                                                                               \
      case DataType::f32: decode_loop<F32>(fixed, kinds, codes, count, divisor, out); return;                      \
      case DataType::f64: decode_loop<F64>(fixed, kinds, codes, count, divisor, out); return;                      \
      case DataType::f16: decode_loop<F16>(fixed, kinds, codes, count, divisor, out); return;                      \
      case DataType::bf16: decode_loop<BF16>(fixed, kinds, codes, count, divisor, out); return;                    \
      default: return;                                                                                             \
    }                                                                                                              \
  }                                                                                                                \
  target void sum_gathered_##isa(const void* const* operands, int n, std::size_t count, DataType dtype,           \
                                 std::size_t divisor, void* out) {                                                 \
    switch (dtype) {                                                                                               \
      case DataType::f32: sum_gathered_loop<F32>(operands, n, count, divisor, out); return;                        \
      case DataType::f64: sum_gathered_loop<F64>(operands, n, count, divisor, out); return;                        \
      case DataType::f16: sum_gathered_loop<F16>(operands, n, count, divisor, out); return;                        \
      case DataType::bf16: sum_gathered_loop<BF16>(operands, n, count, divisor, out); return;                      \
      default: return;                                                                                             \
    }                                                                                                              \
  }

struct Kernels {
  void (*measure)(const void*, std::size_t, DataType, std::int8_t*);
  void (*encode)(const void*, std::size_t, DataType, const std::int8_t*, std::int64_t*, std::int64_t*);
  void (*decode)(const std::int64_t*, const std::int64_t*, const std::int8_t*, std::size_t, DataType, std::size_t,
                 void*);
  void (*sum_gathered)(const void* const*, int, std::size_t, DataType, std::size_t, void*);
};

STRATA_FIXED_POINT_KERNELS(baseline, )
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
// No fma (as the reduction kernels): a fused multiply-add would round differently.
STRATA_FIXED_POINT_KERNELS(avx2, __attribute__((target("avx2"))))
STRATA_FIXED_POINT_KERNELS(avx512, __attribute__((target("avx2,avx512f,avx512bw,avx512vl,avx512dq"))))
#endif

Kernels kernels_for(host::simd::Copy copy) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  if (copy == host::simd::Copy::avx512 && __builtin_cpu_supports("avx512dq"))
    return Kernels{&measure_avx512, &encode_avx512, &decode_avx512, &sum_gathered_avx512};
  if (copy != host::simd::Copy::baseline)
    return Kernels{&measure_avx2, &encode_avx2, &decode_avx2, &sum_gathered_avx2};
#endif
  (void)copy;
  return Kernels{&measure_baseline, &encode_baseline, &decode_baseline, &sum_gathered_baseline};
}

// The copy for the instruction set the reduction kernels run
// (host::simd::chosen(): STRATA_REDUCE_ISA, else the widest this CPU has).
const Kernels& kernels() {
  static const Kernels chosen = kernels_for(host::simd::chosen_copy());
  return chosen;
}

}  // namespace

std::size_t words(DataType dtype) { return dtype == DataType::f64 ? 2 : 1; }

void measure(const void* in, std::size_t count, DataType dtype, std::int8_t* codes) {
  kernels().measure(in, count, dtype, codes);
}

bool any_non_finite(const std::int8_t* codes, std::size_t count) {
  // memchr: the C library's vector search (a plain loop here stays scalar
  // at -O2, 12% of an exact 1 MiB all-reduce under perf).
  return count > 0 && std::memchr(codes, static_cast<unsigned char>(kNonFiniteCode), count) != nullptr;
}

void encode(const void* in, std::size_t count, DataType dtype, const std::int8_t* codes, std::int64_t* fixed,
            std::int64_t* kinds) {
  kernels().encode(in, count, dtype, codes, fixed, kinds);
}

void decode(const std::int64_t* fixed, const std::int64_t* kinds, const std::int8_t* codes, std::size_t count,
            DataType dtype, std::size_t divisor, void* out) {
  kernels().decode(fixed, kinds, codes, count, dtype, divisor, out);
}

void sum_gathered(const void* const* operands, int n, std::size_t count, DataType dtype, std::size_t divisor,
                  void* out) {
  kernels().sum_gathered(operands, n, count, dtype, divisor, out);
}

void sum_gathered_with(std::string_view isa, const void* const* operands, int n, std::size_t count, DataType dtype,
                       std::size_t divisor, void* out) {
  kernels_for(host::simd::copy_for(isa)).sum_gathered(operands, n, count, dtype, divisor, out);
}

}  // namespace strata::exec::fixed_point
