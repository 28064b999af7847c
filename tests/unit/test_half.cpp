// util/half.hpp: f16 and bf16 <-> f32, checked against independent
// references (half_reference.hpp). Exhaustive where the domain is 2^16;
// for f32 -> 16-bit, every tie and its neighbours plus a dense stride over
// all 2^32 patterns, because rounding bugs live at ties and range edges.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <ios>
#include <limits>

#include "util/half.hpp"
#include "half_reference.hpp"

namespace util = strata::util;
namespace ref = strata::test;

namespace {
bool f16_is_nan(std::uint16_t h) { return (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0; }
bool bf16_is_nan(std::uint16_t h) { return (h & 0x7f80u) == 0x7f80u && (h & 0x7fu) != 0; }
std::uint32_t bits(float f) { return std::bit_cast<std::uint32_t>(f); }
float from_bits(std::uint32_t u) { return std::bit_cast<float>(u); }

// Stride through all 2^32 f32 patterns (a prime step so every exponent and
// many mantissa patterns are hit) and call `fn` on each.
template <typename Fn>
void f32_stride(Fn fn) {
  constexpr std::uint64_t kStep = 1021;
  for (std::uint64_t u = 0; u < (std::uint64_t{1} << 32); u += kStep) fn(from_bits(static_cast<std::uint32_t>(u)));
}

// A 16-bit float format: its conversions, the independent reference for
// widening, and which patterns are NaN.
struct Format16 {
  const char* name;
  float (*to_f32)(std::uint16_t);
  std::uint16_t (*from_f32)(float);
  float (*reference_to_f32)(std::uint16_t);
  bool (*is_nan)(std::uint16_t);
};

// All 65536 patterns: widening gives the reference's bits and narrowing
// gives the pattern back; a NaN stays a NaN of the same sign both ways
// (its payload may change). At most 10 mismatches are printed.
void check_every_pattern(const Format16& format) {
  int mismatches = 0;
  for (std::uint32_t i = 0; i < 65536; ++i) {
    const auto h = static_cast<std::uint16_t>(i);
    const float f = format.to_f32(h);
    if (format.is_nan(h)) {
      CHECK(std::isnan(f));
      CHECK(std::signbit(f) == bool(h & 0x8000u));
      CHECK(format.is_nan(format.from_f32(f)));
      CHECK(bool(format.from_f32(f) & 0x8000u) == bool(h & 0x8000u));
      continue;
    }
    if (bits(f) != bits(format.reference_to_f32(h)) || format.from_f32(f) != h) {
      if (++mismatches <= 10)
        FAIL_CHECK(format.name << " 0x" << std::hex << i << " -> f32 0x" << bits(f) << " (reference 0x"
                               << bits(format.reference_to_f32(h)) << ") -> " << format.name << " 0x"
                               << format.from_f32(f));
    }
  }
  CHECK(mismatches == 0);
}
}  // namespace

TEST_CASE("f16 -> f32 is exact for all 65536 patterns, and f16 -> f32 -> f16 round-trips") {
  check_every_pattern({"f16", util::f16_to_f32, util::f32_to_f16, ref::ref_f16_to_f32, f16_is_nan});
}

TEST_CASE("f32 -> f16 rounds to nearest even at every tie and its neighbours") {
  int mismatches = 0;
  auto check_one = [&](float f) {
    const std::uint16_t got = util::f32_to_f16(f), want = ref::ref_f32_to_f16(f);
    if (got != want && ++mismatches <= 10)
      FAIL_CHECK("f32 " << f << " (0x" << std::hex << bits(f) << ") -> f16 0x" << got << ", want 0x" << want);
  };
  // Midpoints between consecutive finite f16 values of the same sign
  // (including the subnormals and the gap to the overflow threshold).
  for (std::uint32_t i = 0; i < 0x7c00; ++i) {
    for (std::uint16_t sign : {std::uint16_t{0}, std::uint16_t{0x8000}}) {
      const double a = ref::ref_f16_to_f32(std::uint16_t(i | sign));
      // Past the largest finite value the next step would be 2^16.
      const double b = i + 1 == 0x7c00 ? (sign ? -65536.0 : 65536.0) : ref::ref_f16_to_f32(std::uint16_t((i + 1) | sign));
      const float mid = static_cast<float>((a + b) / 2);  // exact: f16 midpoints need 12 bits
      check_one(mid);
      check_one(std::nextafter(mid, 0.0f));
      check_one(std::nextafter(mid, sign ? -INFINITY : INFINITY));
    }
  }
  CHECK(mismatches == 0);
}

TEST_CASE("f32 -> f16 agrees with the reference on a dense stride of all f32 patterns") {
  int mismatches = 0;
  f32_stride([&](float f) {
    const std::uint16_t got = util::f32_to_f16(f);
    if (std::isnan(f)) {
      if (!f16_is_nan(got) && ++mismatches <= 10) FAIL_CHECK("NaN 0x" << std::hex << bits(f) << " -> 0x" << got);
      return;
    }
    const std::uint16_t want = ref::ref_f32_to_f16(f);
    if (got != want && ++mismatches <= 10)
      FAIL_CHECK("f32 0x" << std::hex << bits(f) << " -> f16 0x" << got << ", want 0x" << want);
  });
  CHECK(mismatches == 0);
}

TEST_CASE("f32 -> f16 edge values: overflow at 65520, subnormals, signed zero, inf, NaN") {
  CHECK(util::f32_to_f16(65504.0f) == 0x7bff);                                 // largest finite
  CHECK(util::f32_to_f16(std::nextafter(65520.0f, 0.0f)) == 0x7bff);           // just below the threshold
  CHECK(util::f32_to_f16(65520.0f) == 0x7c00);                                 // the tie rounds to even = inf
  CHECK(util::f32_to_f16(-65520.0f) == 0xfc00);
  CHECK(util::f32_to_f16(1e10f) == 0x7c00);
  CHECK(util::f32_to_f16(INFINITY) == 0x7c00);
  CHECK(util::f32_to_f16(-INFINITY) == 0xfc00);
  CHECK(util::f32_to_f16(0.0f) == 0x0000);
  CHECK(util::f32_to_f16(-0.0f) == 0x8000);
  CHECK(util::f32_to_f16(0x1p-24f) == 0x0001);                                 // smallest subnormal
  CHECK(util::f32_to_f16(0x1p-25f) == 0x0000);                                 // tie between 0 and 2^-24: even
  CHECK(util::f32_to_f16(std::nextafter(0x1p-25f, 1.0f)) == 0x0001);
  CHECK(util::f32_to_f16(-std::nextafter(0x1p-25f, 1.0f)) == 0x8001);
  CHECK(util::f32_to_f16(0x3p-25f) == 0x0002);                                 // tie between 1 and 2 ulps: even
  CHECK(util::f32_to_f16(-0x1p-26f) == 0x8000);                                // underflow keeps the sign
  CHECK(util::f32_to_f16(0x1p-14f) == 0x0400);                                 // smallest normal
  CHECK(util::f32_to_f16(std::nextafter(0x1p-14f, 0.0f)) == 0x0400);           // rounds up into the normals
  CHECK(util::f32_to_f16(0x3ffp-24f) == 0x03ff);                               // largest subnormal
  CHECK(util::f32_to_f16(1.0f + 0x1p-11f) == 0x3c00);                          // tie: even (down)
  CHECK(util::f32_to_f16(1.0f + 0x3p-11f) == 0x3c02);                          // tie: even (up)
  CHECK(f16_is_nan(util::f32_to_f16(std::numeric_limits<float>::quiet_NaN())));
  CHECK(f16_is_nan(util::f32_to_f16(from_bits(0x7f800001u))));                 // payload only in low bits
  CHECK(f16_is_nan(util::f32_to_f16(from_bits(0xffc00000u))));
  CHECK(util::f16_to_f32(0x8000) == 0.0f);
  CHECK(std::signbit(util::f16_to_f32(0x8000)));
  CHECK(util::f16_to_f32(0x0001) == 0x1p-24f);
  CHECK(util::f16_to_f32(0x7c00) == INFINITY);
  CHECK(util::f16_to_f32(0xfc00) == -INFINITY);
}

TEST_CASE("bf16 -> f32 -> bf16 round-trips for all 65536 patterns") {
  check_every_pattern({"bf16", util::bf16_to_f32, util::f32_to_bf16, ref::ref_bf16_to_f32, bf16_is_nan});
}

TEST_CASE("f32 -> bf16 rounds to nearest even at every tie, its neighbours and a dense stride") {
  int mismatches = 0;
  auto check_one = [&](float f) {
    if (std::isnan(f)) {
      if (!bf16_is_nan(util::f32_to_bf16(f)) && ++mismatches <= 10)
        FAIL_CHECK("NaN 0x" << std::hex << bits(f) << " -> 0x" << util::f32_to_bf16(f));
      return;
    }
    const std::uint16_t got = util::f32_to_bf16(f), want = ref::ref_f32_to_bf16(f);
    if (got != want && ++mismatches <= 10)
      FAIL_CHECK("f32 0x" << std::hex << bits(f) << " -> bf16 0x" << got << ", want 0x" << want);
  };
  for (std::uint32_t hi = 0; hi < 65536; ++hi) {
    const std::uint32_t tie = (hi << 16) | 0x8000u;  // halfway to the next pattern
    check_one(from_bits(tie));
    check_one(from_bits(tie - 1));
    check_one(from_bits(tie + 1));
  }
  f32_stride(check_one);
  CHECK(mismatches == 0);
}

TEST_CASE("f32 -> bf16 edge values: overflow, subnormals, signed zero, NaN with low payload") {
  CHECK(util::f32_to_bf16(from_bits(0x7f7f7fffu)) == 0x7f7f);  // just below the overflow tie
  CHECK(util::f32_to_bf16(from_bits(0x7f7f8000u)) == 0x7f80);  // tie above the largest finite: inf
  CHECK(util::f32_to_bf16(std::numeric_limits<float>::max()) == 0x7f80);
  CHECK(util::f32_to_bf16(-std::numeric_limits<float>::max()) == 0xff80);
  CHECK(util::f32_to_bf16(INFINITY) == 0x7f80);
  CHECK(util::f32_to_bf16(0.0f) == 0x0000);
  CHECK(util::f32_to_bf16(-0.0f) == 0x8000);
  CHECK(util::f32_to_bf16(from_bits(0x00008000u)) == 0x0000);  // subnormal tie: even (down)
  CHECK(util::f32_to_bf16(from_bits(0x00018000u)) == 0x0002);  // subnormal tie: even (up)
  CHECK(util::f32_to_bf16(from_bits(0x007fffffu)) == 0x0080);  // largest subnormal rounds up to the smallest normal
  CHECK(util::f32_to_bf16(1.0f + 0x1p-8f) == 0x3f80);          // tie: even (down)
  CHECK(util::f32_to_bf16(1.0f + 0x3p-8f) == 0x3f82);          // tie: even (up)
  CHECK(bf16_is_nan(util::f32_to_bf16(from_bits(0x7f800001u))));  // must not become inf
  CHECK(bf16_is_nan(util::f32_to_bf16(from_bits(0xff800001u))));
  CHECK(bf16_is_nan(util::f32_to_bf16(std::numeric_limits<float>::quiet_NaN())));
}
