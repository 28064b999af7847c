// Device twins of util/half.hpp: the same bit manipulations, so GPU and host
// round f16/bf16 identically (nearest even, quiet NaN kept, f16 overflow to
// inf at 65520). Change both files together.
#pragma once

#include <cstdint>

namespace strata::cuda {

__device__ __forceinline__ float bf16_to_f32(std::uint16_t h) { return __uint_as_float(std::uint32_t(h) << 16); }

__device__ __forceinline__ std::uint16_t f32_to_bf16(float f) {
  std::uint32_t u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return std::uint16_t((u >> 16) | 0x40);
  u += 0x7fffu + ((u >> 16) & 1u);
  return std::uint16_t(u >> 16);
}

__device__ __forceinline__ float f16_to_f32(std::uint16_t h) {
  const std::uint32_t sign = std::uint32_t(h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1fu;
  const std::uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f) return __uint_as_float(sign | 0x7f800000u | (mant << 13));
  if (exp != 0) return __uint_as_float(sign | ((exp + 112) << 23) | (mant << 13));
  if (mant == 0) return __uint_as_float(sign);
  const float magnitude = float(mant) * 0x1p-24f;
  return sign ? -magnitude : magnitude;
}

__device__ __forceinline__ std::uint16_t f32_to_f16(float f) {
  const std::uint32_t u = __float_as_uint(f);
  const std::uint16_t sign = std::uint16_t((u >> 16) & 0x8000u);
  const std::uint32_t abs = u & 0x7fffffffu;
  if (abs > 0x7f800000u) return std::uint16_t(sign | 0x7e00u | ((abs >> 13) & 0x3ffu));
  if (abs >= 0x477ff000u) return std::uint16_t(sign | 0x7c00u);
  if (abs >= 0x38800000u) {
    std::uint32_t r = abs - 0x38000000u;
    r += 0xfffu + ((r >> 13) & 1u);
    return std::uint16_t(sign | (r >> 13));
  }
  if (abs < 0x33000000u) return sign;
  const std::uint32_t exp = abs >> 23;
  const std::uint32_t mant = (abs & 0x7fffffu) | 0x800000u;
  const std::uint32_t shift = 126 - exp;
  std::uint32_t result = mant >> shift;
  const std::uint32_t rem = mant & ((1u << shift) - 1);
  const std::uint32_t halfway = 1u << (shift - 1);
  if (rem > halfway || (rem == halfway && (result & 1u))) ++result;
  return std::uint16_t(sign | result);
}

// How a dtype is stored and in which type its arithmetic happens.
template <typename T>
struct NativeCodec {
  using Storage = T;
  using Compute = T;
  __device__ static T load(T v) { return v; }
  __device__ static T store(T v) { return v; }
};
struct F16Codec {
  using Storage = std::uint16_t;
  using Compute = float;
  __device__ static float load(std::uint16_t v) { return f16_to_f32(v); }
  __device__ static std::uint16_t store(float v) { return f32_to_f16(v); }
};
struct BF16Codec {
  using Storage = std::uint16_t;
  using Compute = float;
  __device__ static float load(std::uint16_t v) { return bf16_to_f32(v); }
  __device__ static std::uint16_t store(float v) { return f32_to_bf16(v); }
};

}  // namespace strata::cuda
