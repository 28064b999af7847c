// Independent references for the 16-bit float conversions, used by the unit
// tests of util/half.hpp and of the reduce kernel. f16 uses the compiler's
// _Float16 (libgcc converts with IEEE round-to-nearest-even); bf16 has no
// arithmetic type in g++ 12, so it is rounded here by comparing distances
// to the two neighbouring bf16 values in double precision.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>

namespace strata::test {

inline float ref_f16_to_f32(std::uint16_t bits) { return static_cast<float>(std::bit_cast<_Float16>(bits)); }
inline std::uint16_t ref_f32_to_f16(float f) { return std::bit_cast<std::uint16_t>(static_cast<_Float16>(f)); }

inline float ref_bf16_to_f32(std::uint16_t bits) { return std::bit_cast<float>(std::uint32_t(bits) << 16); }

// Non-NaN input only. Truncation gives the neighbour towards zero; the
// other neighbour is one bf16 step further out (2^128 past the largest
// finite value, which is where IEEE puts the overflow threshold).
inline std::uint16_t ref_f32_to_bf16(float f) {
  const std::uint32_t u = std::bit_cast<std::uint32_t>(f);
  const std::uint16_t toward_zero = std::uint16_t(u >> 16);
  if ((u & 0xffffu) == 0) return toward_zero;
  const std::uint16_t sign = toward_zero & 0x8000u, magnitude = toward_zero & 0x7fffu;
  const double x = std::fabs(static_cast<double>(f));
  const double lo = static_cast<double>(ref_bf16_to_f32(magnitude));
  const double hi = magnitude == 0x7f7fu ? std::ldexp(1.0, 128) : static_cast<double>(ref_bf16_to_f32(magnitude + 1));
  const double below = x - lo, above = hi - x;
  std::uint16_t result = magnitude;
  if (above < below || (above == below && (magnitude & 1u))) result = magnitude + 1;  // ties to even
  return sign | result;
}

}  // namespace strata::test
