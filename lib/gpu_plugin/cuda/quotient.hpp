// MEAN's division x / b, correctly rounded, without the divide instruction
// sequence on the fast path: a GPU's IEEE division takes a slow subroutine
// whenever its operand check fails (zeros among them, which gradients are
// full of), and that made the bf16 MEAN finish compute-bound at 41% of a
// copy's bandwidth on an H200. Here the quotient comes from the reciprocal
// r = RN(1/b): q0 = RN(x r), then two exact-remainder corrections
// (remainder x - q b by one fused multiply-add, which is exact while the
// quotient is normal; Markstein's theorem: a faithful q corrected once
// with RN(1/b) is RN(x/b)). The first correction makes q faithful, the
// second rounds it correctly. Outside the window where that holds (a
// subnormal or tiny quotient, an infinite or NaN operand) it divides.
// Bit-identical to `x / b` for every x and every b >= 1 (the unit test
// test_quotient checks every f16 and bf16 value and sampled f32/f64 on the
// host, test_gpu_kernels the device against host::divide_by).
//
// Plain C++ as well as CUDA: the kernels (lib/gpu_plugin/cuda/scale.cu) and the host
// test compile the same lines.
#pragma once

#include <cmath>

#if defined(__CUDACC__)
#define STRATA_QUOTIENT_FN __host__ __device__ __forceinline__
#else
#define STRATA_QUOTIENT_FN inline
#endif

namespace strata::cuda {

// The normal range of F (std::numeric_limits is host-only in device code).
template <typename F>
struct NormalRange;
template <>
struct NormalRange<float> {
  static constexpr float smallest = 0x1p-126f, largest = 0x1.fffffep127f;
};
template <>
struct NormalRange<double> {
  static constexpr double smallest = 0x1p-1022, largest = 0x1.fffffffffffffp1023;
};

// The divisor's reciprocal, computed once per launch.
template <typename F>
STRATA_QUOTIENT_FN F reciprocal_of(F b) {
  return F(1) / b;
}

// RN(x / b) for a divisor b >= 1 with reciprocal r = reciprocal_of(b).
template <typename F>
STRATA_QUOTIENT_FN F quotient(F x, F b, F r) {
  // Smallest quotient whose corrections stay exact: twice the smallest
  // normal, so q0's rounding cannot take it below the normal range.
  constexpr F kSmallest = NormalRange<F>::smallest * F(2);
  const F q0 = x * r;
  const F magnitude = q0 < F(0) ? -q0 : q0;
  if (!(magnitude >= kSmallest && magnitude <= NormalRange<F>::largest)) {
    // 0 * r is the signed zero x / b gives; everything else outside the
    // window (tiny, infinite, NaN) takes the real division.
    return x == F(0) ? q0 : x / b;
  }
  const F q1 = std::fma(std::fma(-q0, b, x), r, q0);
  return std::fma(std::fma(-q1, b, x), r, q1);
}

}  // namespace strata::cuda

#undef STRATA_QUOTIENT_FN
