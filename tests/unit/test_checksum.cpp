// The integrity check's checksums (exec/checksum.hpp): every instruction
// set's copy gives the baseline's bits, the hash matches its definition
// (written out here once more, lane by lane) and sees every flipped bit, and
// the sums stay within their stated bound of a long-double sum.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "exec/checksum.hpp"
#include "host/reduce_simd.hpp"
#include "util/half.hpp"

using namespace strata;

namespace {

const std::size_t kCounts[] = {0, 1, 7, 8, 9, 31, 4095, 4096, 4097, 12345};

// The hash's definition, one word at a time.
std::uint64_t reference_hash(const void* data, std::size_t bytes) {
  std::vector<std::byte> padded(static_cast<const std::byte*>(data), static_cast<const std::byte*>(data) + bytes);
  padded.resize((bytes / 32 + 1) * 32);  // the last (partial or empty) stride, zero-padded
  std::uint64_t sum[4] = {}, prefix[4] = {};
  for (std::size_t i = 0; i < padded.size(); i += 32)
    for (int l = 0; l < 4; ++l) {
      std::uint64_t word;
      std::memcpy(&word, padded.data() + i + 8 * l, 8);
      sum[l] += word;
      prefix[l] += sum[l];
    }
  std::uint64_t h = bytes * 0x9e3779b97f4a7c15ULL;
  for (int l = 0; l < 4; ++l)
    h += sum[l] * (0x2545f4914f6cdd1dULL | 1) + prefix[l] * ((0x94d049bb133111ebULL + 2 * l) & ~1ULL);
  for (const std::uint64_t multiplier : {0xff51afd7ed558ccdULL, 0xc4ceb9fe1a85ec53ULL}) {  // MurmurHash3's finaliser
    h ^= h >> 33;
    h *= multiplier;
  }
  return h ^ (h >> 33);
}

std::vector<std::byte> random_bytes(std::size_t bytes, std::mt19937_64& rng) {
  std::vector<std::byte> data(bytes);
  for (auto& b : data) b = static_cast<std::byte>(rng());
  return data;
}

// `count` values of mixed sign and magnitude, stored as `dtype`.
std::vector<std::byte> random_values(DataType dtype, std::size_t count, std::mt19937_64& rng) {
  std::vector<std::byte> data(count * dtype_size(dtype));
  std::uniform_real_distribution<double> mantissa(-1, 1);
  std::uniform_int_distribution<int> exponent(-12, dtype == DataType::f16 ? 14 : 20);  // (f16 ends at 65504)
  for (std::size_t i = 0; i < count; ++i) {
    const double v = std::ldexp(mantissa(rng), exponent(rng));
    auto* at = data.data() + i * dtype_size(dtype);
    switch (dtype) {
      case DataType::f32: { const float f = static_cast<float>(v); std::memcpy(at, &f, 4); break; }
      case DataType::f64: std::memcpy(at, &v, 8); break;
      case DataType::f16: { const auto h = util::f32_to_f16(static_cast<float>(v)); std::memcpy(at, &h, 2); break; }
      case DataType::bf16: { const auto h = util::f32_to_bf16(static_cast<float>(v)); std::memcpy(at, &h, 2); break; }
      default: { const auto word = rng(); std::memcpy(at, &word, dtype_size(dtype)); break; }
    }
  }
  return data;
}

double value_at(const std::byte* data, DataType dtype, std::size_t i) {
  const auto* at = data + i * dtype_size(dtype);
  switch (dtype) {
    case DataType::f32: { float f; std::memcpy(&f, at, 4); return f; }
    case DataType::f64: { double d; std::memcpy(&d, at, 8); return d; }
    case DataType::f16: { std::uint16_t h; std::memcpy(&h, at, 2); return util::f16_to_f32(h); }
    default: { std::uint16_t h; std::memcpy(&h, at, 2); return util::bf16_to_f32(h); }
  }
}

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

}  // namespace

TEST_CASE("the hash: its definition in every copy, and every flipped bit seen") {
  std::mt19937_64 rng(7);
  for (const std::size_t bytes : {std::size_t{0}, std::size_t{1}, std::size_t{31}, std::size_t{32},
                                  std::size_t{33}, std::size_t{1000}, std::size_t{65537}}) {
    const std::vector<std::byte> data = random_bytes(bytes, rng);
    const std::uint64_t expected = reference_hash(data.data(), bytes);
    for (const host::simd::Kernel& isa : host::simd::usable()) {
      CAPTURE(isa.name);
      CAPTURE(bytes);
      CHECK(exec::hash_bytes_with(isa.name, data.data(), bytes) == expected);
    }
    CHECK(exec::hash_bytes(data.data(), bytes) == expected);
    std::vector<std::byte> flipped = data;
    for (int k = 0; k < 64 && bytes > 0; ++k) {
      const std::size_t bit = rng() % (bytes * 8);
      flipped[bit / 8] ^= std::byte{1} << (bit % 8);
      CHECK(exec::hash_bytes(flipped.data(), bytes) != expected);
      flipped[bit / 8] ^= std::byte{1} << (bit % 8);
    }
  }
}

TEST_CASE("the element sums: the baseline's bits in every copy, within the bound of the exact sum") {
  std::mt19937_64 rng(11);
  for (const DataType dtype : {DataType::f32, DataType::f64, DataType::f16, DataType::bf16, DataType::i8,
                               DataType::u8, DataType::i32, DataType::u32, DataType::i64, DataType::u64}) {
    for (const std::size_t count : kCounts) {
      std::vector<std::byte> data = random_values(dtype, count, rng);
      if (count > 9 && (dtype == DataType::f32 || dtype == DataType::f64)) {  // a NaN and an infinity among them
        const double nan = std::numeric_limits<double>::quiet_NaN();
        const float nan_f = static_cast<float>(nan);
        std::memcpy(data.data() + 3 * dtype_size(dtype), dtype == DataType::f32 ? static_cast<const void*>(&nan_f)
                                                                               : static_cast<const void*>(&nan),
                    dtype_size(dtype));
      }
      CAPTURE(static_cast<int>(dtype));
      CAPTURE(count);
      const exec::ElementSums base = exec::element_sums_with("baseline", data.data(), count, dtype);
      for (const host::simd::Kernel& isa : host::simd::usable()) {
        CAPTURE(isa.name);
        const exec::ElementSums sums = exec::element_sums_with(isa.name, data.data(), count, dtype);
        CHECK(sums.wrapping == base.wrapping);
        CHECK(same_bits(sums.sum, base.sum));
        CHECK(same_bits(sums.magnitude, base.magnitude));
      }
      const bool floating = dtype == DataType::f32 || dtype == DataType::f64 || dtype == DataType::f16 ||
                            dtype == DataType::bf16;
      if (!floating) continue;
      long double exact = 0, magnitude = 0;
      bool nan = false;
      for (std::size_t i = 0; i < count; ++i) {
        const double v = value_at(data.data(), dtype, i);
        nan |= std::isnan(v);
        exact += v;
        magnitude += std::fabs(v);
      }
      if (nan) {
        CHECK(std::isnan(base.sum));
        continue;
      }
      CHECK(std::fabs(static_cast<long double>(base.sum) - exact) <=
            exec::sum_error_bound(count) * static_cast<long double>(base.magnitude));
      CHECK(std::fabs(static_cast<long double>(base.magnitude) - magnitude) <=
            exec::sum_error_bound(count) * magnitude);
    }
  }
}
