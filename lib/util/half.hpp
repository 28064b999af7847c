// IEEE binary16 (f16) and bfloat16 conversions to and from f32, rounding to
// nearest even. strata reduces both 16-bit types in f32 and rounds once per
// reduction step, so these sit on the hot path: header-only and branch-light.
#pragma once

#include <bit>
#include <cstdint>

namespace strata::util {

inline float bf16_to_f32(std::uint16_t h) { return std::bit_cast<float>(std::uint32_t(h) << 16); }

inline std::uint16_t f32_to_bf16(float f) {
  std::uint32_t u = std::bit_cast<std::uint32_t>(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return std::uint16_t((u >> 16) | 0x40);  // NaN stays quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);                                             // round to nearest even
  return std::uint16_t(u >> 16);
}

inline float f16_to_f32(std::uint16_t h) {
  const std::uint32_t sign = std::uint32_t(h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1fu;
  std::uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));  // inf / NaN
  if (exp != 0) return std::bit_cast<float>(sign | ((exp + 112) << 23) | (mant << 13));
  if (mant == 0) return std::bit_cast<float>(sign);  // signed zero
  // Subnormal: value = mant * 2^-24, exact in f32.
  const float magnitude = float(mant) * 0x1p-24f;
  return sign ? -magnitude : magnitude;
}

inline std::uint16_t f32_to_f16(float f) {
  const std::uint32_t u = std::bit_cast<std::uint32_t>(f);
  const std::uint16_t sign = std::uint16_t((u >> 16) & 0x8000u);
  const std::uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) return std::uint16_t(sign | 0x7e00u | ((abs >> 13) & 0x3ffu));  // NaN
  if (abs >= 0x477ff000u) return std::uint16_t(sign | 0x7c00u);  // rounds to >= 65520: inf
  if (abs >= 0x38800000u) {                                       // normal f16 range
    std::uint32_t r = abs - 0x38000000u;                          // rebias exponent 127 -> 15
    r += 0xfffu + ((r >> 13) & 1u);                               // round to nearest even
    return std::uint16_t(sign | (r >> 13));
  }
  if (abs < 0x33000000u) return sign;  // below half the smallest subnormal: zero
  // Subnormal f16: shift the implicit-one mantissa right, rounding to nearest even.
  const std::uint32_t exp = abs >> 23;
  const std::uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
  const std::uint32_t shift = 126 - exp;  // 14..24 for this range
  std::uint32_t result = mant >> shift;
  const std::uint32_t rem = mant & ((1u << shift) - 1);
  const std::uint32_t halfway = 1u << (shift - 1);
  if (rem > halfway || (rem == halfway && (result & 1u))) ++result;
  return std::uint16_t(sign | result);
}

}  // namespace strata::util
