// Exact, order-independent sums of floating-point data: each element is
// turned into 64-bit fixed point relative to a scale every rank shares (the
// largest magnitude any rank holds in that element), the integers are
// summed by any plan (integer sums are exact, so their order and shape do
// not matter), and the sum is turned back, rounded once. The reproducible
// mode `exact` (exec/reproducible.hpp) runs these three steps around two
// collectives; this file is the arithmetic alone (no communication).
//
// Scale codes, one signed byte per element, agreed as a maximum over the
// ranks: for f32, f16 and bf16 the binary exponent of the magnitude
// (clamped to [-128, 126]), for f64 that exponent / 16; kZeroCode for a
// zero (it never wins the maximum), kNonFiniteCode for an infinity or NaN.
// A value becomes round(x * 2^(40 - E)) for its element's scale E (f64: two
// words, the second holding the 40 bits below the first), so every
// contribution within 2^16 of the largest (f32; all of f16 and bf16's; f64:
// within 2^12) is converted exactly, and smaller ones are rounded to 2^-40
// of the largest (f64: 2^-80). Non-finite contributions are counted per
// kind instead (kinds), and the element's result is NaN, +inf or -inf as
// IEEE addition in any order gives.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "strata/types.hpp"

namespace strata::exec::fixed_point {

constexpr std::int8_t kZeroCode = -128;
constexpr std::int8_t kNonFiniteCode = 127;
// The most contributions a sum may have: the fixed-point words and the kind
// counts must not overflow.
constexpr std::size_t kMaxContributors = std::size_t{1} << 20;

// Fixed-point words per element: 2 for f64, else 1.
std::size_t words(DataType dtype);

// codes[i] = the scale code of in[i] (`dtype` floating).
void measure(const void* in, std::size_t count, DataType dtype, std::int8_t* codes);

// Whether any agreed code says a contribution is not finite.
bool any_non_finite(const std::int8_t* codes, std::size_t count);

// fixed[words(dtype) * i ...] = in[i] in fixed point at the agreed scale
// codes[i] (0 where the code is kNonFiniteCode). `kinds` (null where no
// code is kNonFiniteCode): kinds[i] = this value's kind count (NaN 2^42,
// +inf 2^21, -inf 1, finite 0), summed over the ranks like the words.
void encode(const void* in, std::size_t count, DataType dtype, const std::int8_t* codes, std::int64_t* fixed,
            std::int64_t* kinds);

// out[i] = the summed fixed[...] of element i as `dtype`, divided by
// `divisor` (> 1 for a mean), rounded once (a mean: its sum rounded to
// double first); a zero sum gives +0; `kinds` (null: none) gives NaN where
// a NaN or both infinities were summed, else the infinity.
void decode(const std::int64_t* fixed, const std::int64_t* kinds, const std::int8_t* codes, std::size_t count,
            DataType dtype, std::size_t divisor, void* out);

// out[i] = the sum of operands[0..n)[i] (n >= 1 arrays of `count` elements
// of `dtype` floating) divided by `divisor`, for a rank that holds every
// contribution of these elements at once: exactly the bits of measure,
// the codes' maximum over the operands, encode, the words' sum and
// decode. `out` may be one of the operands (each element is read before
// it is written).
void sum_gathered(const void* const* operands, int n, std::size_t count, DataType dtype, std::size_t divisor,
                  void* out);
// sum_gathered as one instruction set's copy computes it ("baseline",
// "avx2", "avx512"; one this build or CPU lacks falls back to the
// baseline), for the test that checks every copy gives the same bits.
void sum_gathered_with(std::string_view isa, const void* const* operands, int n, std::size_t count, DataType dtype,
                       std::size_t divisor, void* out);

}  // namespace strata::exec::fixed_point
