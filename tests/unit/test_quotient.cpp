// gpu_plugin/cuda/quotient.hpp (the GPU MEAN finish's division, here compiled as plain
// C++) against the division it replaces, `x / b`, bit for bit (a NaN
// against a NaN): every f16 and bf16 value as f32 over many divisors, f32
// through a prime stride of all 2^32 patterns, f64 samples, and the edges
// (signed zeros, subnormals, the window's boundary, the largest values,
// infinities, NaN). The device runs the same lines; test_gpu_kernels
// checks it there against host::divide_by.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <ios>
#include <limits>
#include <random>
#include <vector>

#include "gpu_plugin/cuda/quotient.hpp"
#include "util/half.hpp"

namespace {

using strata::cuda::quotient;
using strata::cuda::reciprocal_of;

// Divisors: every small count, and large ones that are not powers of two
// or not representable (float(d) rounds, for both sides alike).
std::vector<std::uint64_t> divisors() {
  std::vector<std::uint64_t> out;
  for (std::uint64_t d = 1; d <= 257; ++d) out.push_back(d);
  for (std::uint64_t d : {1000ull, 1023ull, 1025ull, 4097ull, 65535ull, 65537ull, 999983ull, (1ull << 24) - 1,
                          1ull << 24, (1ull << 24) + 1, 3ull << 40, (1ull << 53) + 1, ~0ull})
    out.push_back(d);
  return out;
}

template <typename F>
bool same(F got, F want) {
  if (std::isnan(want)) return std::isnan(got);
  using U = std::conditional_t<sizeof(F) == 4, std::uint32_t, std::uint64_t>;
  return std::bit_cast<U>(got) == std::bit_cast<U>(want);
}

// Counts mismatches of quotient(x, b) against x / b; reports the first few.
template <typename F>
struct Checker {
  std::uint64_t checked = 0, wrong = 0;
  void check(F x, std::uint64_t divisor) {
    const F b = static_cast<F>(divisor);
    const F got = quotient(x, b, reciprocal_of(b)), want = x / b;
    ++checked;
    if (!same(got, want) && ++wrong <= 5)
      MESSAGE("x = " << std::hexfloat << x << " / " << std::defaultfloat << divisor << ": got " << std::hexfloat
                     << got << ", want " << want);
  }
};

template <typename F>
std::vector<F> edges() {
  using L = std::numeric_limits<F>;
  std::vector<F> out = {F(0), -F(0), L::denorm_min(), L::min(), L::min() * F(2), L::min() * F(3), L::max(),
                        L::infinity(), L::quiet_NaN(), F(1), F(3), F(1) / F(3)};
  for (std::size_t i = 0, n = out.size(); i < n; ++i) {
    out.push_back(-out[i]);
    out.push_back(std::nextafter(out[i], F(0)));
    out.push_back(std::nextafter(out[i], L::infinity()));
  }
  // Around the window's lower edge for large divisors too.
  for (int e = -8; e <= 70; ++e) out.push_back(std::ldexp(L::min(), e) * F(1.25));
  return out;
}

}  // namespace

TEST_CASE("every f16 and bf16 value, as the 16-bit MEAN finish divides it in f32") {
  Checker<float> c;
  for (std::uint64_t d : divisors())
    for (std::uint32_t h = 0; h <= 0xffffu; ++h) {
      c.check(strata::util::f16_to_f32(std::uint16_t(h)), d);
      c.check(strata::util::bf16_to_f32(std::uint16_t(h)), d);
    }
  CHECK(c.checked == divisors().size() * 2 * 65536);
  CHECK(c.wrong == 0);
}

TEST_CASE("f32: a prime stride through all 2^32 patterns, and the edges") {
  Checker<float> c;
  const std::uint64_t some[] = {3, 5, 6, 7, 9, 10, 12, 24, 100, 127, 1000, 12345, (1ull << 24) + 1, 3ull << 40};
  for (std::uint64_t d : some)
    for (std::uint64_t u = 0; u < (1ull << 32); u += 4093) c.check(std::bit_cast<float>(std::uint32_t(u)), d);
  for (std::uint64_t d : divisors())
    for (float x : edges<float>()) c.check(x, d);
  CHECK(c.wrong == 0);
}

TEST_CASE("f64: random patterns, values of every exponent, and the edges") {
  Checker<double> c;
  std::mt19937_64 rng(20261127);
  const std::uint64_t some[] = {3, 7, 10, 24, 1000, 999983, (1ull << 53) + 1, ~0ull};
  for (std::uint64_t d : some) {
    for (int i = 0; i < 200000; ++i) c.check(std::bit_cast<double>(rng()), d);
    for (int e = -1080; e <= 1024; ++e) c.check(std::ldexp(1.0 + double(rng() >> 12) * 0x1p-52, e), d);
  }
  for (std::uint64_t d : divisors())
    for (double x : edges<double>()) c.check(x, d);
  CHECK(c.wrong == 0);
}
