// Why strata's GPU kernels may use the native paired f16/bf16 instructions
// (__hadd2_rn, __hmul2_rn: one correctly rounded operation) and still give
// the host's bits: the host reduces f16/bf16 in f32 and rounds once
// (lib/host/reduce_kernel, util/half.hpp), and for sum and product that
// equals the correctly rounded result, because f32's 24 significant bits
// are at least 2p + 2 for f16 (p = 11) and bf16 (p = 8), so rounding twice
// is innocuous. This checks that claim on the host, against an independent
// reference (exact arithmetic in double, rounded to nearest even by
// scaling), exhaustively in the first operand: every finite f16/bf16
// pattern against specials and random finite partners. test_gpu_kernels
// checks the native instructions against the host kernel on a GPU.
#include <doctest/doctest.h>

#include <cfenv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "host/reduce_kernel.hpp"
#include "util/half.hpp"

using namespace strata;

namespace {

struct Format {
  int precision;  // significant bits, the implicit one included
  int emin;       // exponent of the smallest normal
  int emax;
  int bias;
  std::uint16_t inf;  // the bits of +infinity
};
constexpr Format kF16{11, -14, 15, 15, 0x7c00};
constexpr Format kBF16{8, -126, 127, 127, 0x7f80};

bool finite(std::uint16_t h, const Format& f) { return (h & f.inf) != f.inf; }

double decode(std::uint16_t h, const Format& f) {
  const int mant_bits = f.precision - 1;
  const bool negative = h & 0x8000;
  const int exp = (h & 0x7fff) >> mant_bits;
  const int mant = h & ((1 << mant_bits) - 1);
  const double value = exp == 0 ? std::ldexp(double(mant), f.emin - mant_bits)
                                : std::ldexp(double(mant | (1 << mant_bits)), exp - f.bias - mant_bits);
  return negative ? -value : value;
}

// The nearest value of the format to x (ties to even), as bits. x is
// finite and exact enough: a sum or product of two values of the format
// computed in double (exact, or within one double ulp of an operand far
// from any tie point).
std::uint16_t round_to(double x, const Format& f) {
  const std::uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  x = std::fabs(x);
  if (x == 0) return sign;
  int e = 0;
  std::frexp(x, &e);  // x = m * 2^e, m in [0.5, 1)
  const int exponent = std::max(e - 1, f.emin);
  const double quantum = std::ldexp(1.0, exponent - (f.precision - 1));
  const double rounded = std::nearbyint(x / quantum) * quantum;  // default mode: nearest, ties to even
  if (rounded >= std::ldexp(1.0, f.emax + 1)) return sign | f.inf;
  if (rounded == 0) return sign;  // underflow
  std::frexp(rounded, &e);
  const int mant_bits = f.precision - 1;
  if (e - 1 < f.emin)  // subnormal
    return sign | std::uint16_t(rounded / std::ldexp(1.0, f.emin - mant_bits));
  const auto mant = std::uint16_t(rounded / std::ldexp(1.0, e - 1 - mant_bits)) & ((1 << mant_bits) - 1);
  return sign | std::uint16_t((e - 1 + f.bias) << mant_bits) | mant;
}

void check_format(DataType dtype, const Format& f) {
  REQUIRE(std::fegetround() == FE_TONEAREST);
  std::mt19937 rng(7);
  std::vector<std::uint16_t> partners = {0x0000, 0x8000, 0x0001, 0x8001};
  while (partners.size() < 256) {
    const auto h = std::uint16_t(rng());
    if (finite(h, f)) partners.push_back(h);
  }
  std::vector<std::uint16_t> a, b;
  for (std::uint32_t x = 0; x < 65536; ++x)
    if (finite(std::uint16_t(x), f))
      for (std::uint16_t y : partners) a.push_back(std::uint16_t(x)), b.push_back(y);
  std::vector<std::uint16_t> got(a.size());
  for (const ReduceOp op : {ReduceOp::sum, ReduceOp::prod}) {
    host::reduce_into(got.data(), a.data(), b.data(), a.size(), dtype, op);
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
      const double x = decode(a[i], f), y = decode(b[i], f);
      const double exact = op == ReduceOp::sum ? x + y : x * y;
      const std::uint16_t want = round_to(exact, f);
      if (got[i] != want) {
        if (wrong++ < 5) MESSAGE("a=" << a[i] << " b=" << b[i] << " host=" << got[i] << " correctly rounded=" << want);
      }
    }
    CAPTURE(int(op));
    CHECK(wrong == 0);
  }
}

}  // namespace

TEST_CASE("the reference rounding agrees with util::half on values it can check directly") {
  // Every finite pattern survives decode -> round_to, and f32 conversion.
  for (std::uint32_t x = 0; x < 65536; ++x) {
    const auto h = std::uint16_t(x);
    if (finite(h, kF16)) REQUIRE(round_to(decode(h, kF16), kF16) == h);
    if (finite(h, kF16)) REQUIRE(double(util::f16_to_f32(h)) == decode(h, kF16));
    if (finite(h, kBF16)) REQUIRE(round_to(decode(h, kBF16), kBF16) == h);
    if (finite(h, kBF16)) REQUIRE(double(util::bf16_to_f32(h)) == decode(h, kBF16));
  }
  CHECK(round_to(65520.0, kF16) == 0x7c00);  // rounds up to infinity
  CHECK(round_to(65519.0, kF16) == 0x7bff);
  CHECK(round_to(std::ldexp(1.0, -25), kF16) == 0x0000);  // half the smallest subnormal: tie to even (zero)
  CHECK(round_to(std::ldexp(3.0, -26), kF16) == 0x0001);
}

TEST_CASE("f16: f32 then one rounding equals the correctly rounded sum and product") { check_format(DataType::f16, kF16); }

TEST_CASE("bf16: f32 then one rounding equals the correctly rounded sum and product") {
  check_format(DataType::bf16, kBF16);
}
