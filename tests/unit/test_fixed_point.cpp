// The exact sum's gathered form (exec/fixed_point.hpp, sum_gathered): on a
// rank that holds every contribution of its elements, every instruction
// set's copy gives the bits of the collective form's steps composed here
// (measure each contribution, the codes' maximum, encode, the words'
// wrapping sum, decode), for every floating dtype, operand count, mean
// divisor and kind of value: mixed magnitudes beyond the exactly converted
// range, zeros of both signs, subnormals, values at the top of the range,
// and infinities and NaNs in some steps.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "exec/fixed_point.hpp"
#include "util/element.hpp"
#include "util/half.hpp"

using namespace strata;
namespace fp = strata::exec::fixed_point;

namespace {

const DataType kFloating[] = {DataType::f32, DataType::f64, DataType::f16, DataType::bf16};
const char* const kCopies[] = {"baseline", "avx2", "avx512"};

std::string name(DataType dtype) {
  switch (dtype) {
    case DataType::f64: return "f64";
    case DataType::f16: return "f16";
    case DataType::bf16: return "bf16";
    default: return "f32";
  }
}

void put(std::vector<std::byte>& data, std::size_t i, DataType dtype, double v) {
  const std::size_t eb = util::element_bytes(dtype);
  std::byte* at = data.data() + i * eb;
  if (dtype == DataType::f64) {
    std::memcpy(at, &v, 8);
  } else if (dtype == DataType::f32) {
    const auto f = static_cast<float>(v);
    std::memcpy(at, &f, 4);
  } else {
    const auto f = static_cast<float>(v);
    const std::uint16_t h = dtype == DataType::f16 ? util::f32_to_f16(f) : util::f32_to_bf16(f);
    std::memcpy(at, &h, 2);
  }
}

// One contribution of `count` elements: every kind of value the sum meets.
// `non_finite`: whether infinities and NaNs appear (in a few elements).
std::vector<std::byte> contribution(std::mt19937_64& rng, std::size_t count, DataType dtype, bool non_finite) {
  std::vector<std::byte> data(count * util::element_bytes(dtype));
  const double top = dtype == DataType::f64 ? 0x1p1020 : dtype == DataType::f16 ? 60000.0 : 0x1.fffffep127;
  const double tiny = dtype == DataType::f64 ? 0x1p-1060 : dtype == DataType::f16 ? 0x1p-22 : 0x1p-140;
  std::uniform_int_distribution<int> kind(0, 99), spread(-40, 40);
  std::uniform_real_distribution<double> mantissa(1.0, 2.0);
  for (std::size_t i = 0; i < count; ++i) {
    const int k = kind(rng);
    const double sign = k % 2 ? -1.0 : 1.0;
    double v = sign * std::ldexp(mantissa(rng), spread(rng));  // mixed magnitudes, most of them
    if (k < 6) v = k % 2 ? -0.0 : 0.0;
    else if (k < 9) v = sign * tiny * mantissa(rng);  // subnormal
    else if (k < 11) v = sign * top / mantissa(rng);  // the top of the range (f32: the clamped code)
    else if (non_finite && k == 11) v = sign * std::numeric_limits<double>::infinity();
    else if (non_finite && k == 12) v = std::numeric_limits<double>::quiet_NaN();
    put(data, i, dtype, v);
  }
  return data;
}

// The collective form's steps, composed on one process.
std::vector<std::byte> composed(const std::vector<std::vector<std::byte>>& operands, std::size_t count,
                                DataType dtype, std::size_t divisor) {
  const std::size_t words = fp::words(dtype);
  std::vector<std::int8_t> codes(count, fp::kZeroCode), mine(count);
  for (const auto& operand : operands) {
    fp::measure(operand.data(), count, dtype, mine.data());
    for (std::size_t i = 0; i < count; ++i) codes[i] = std::max(codes[i], mine[i]);
  }
  const bool non_finite = fp::any_non_finite(codes.data(), count);
  std::vector<std::uint64_t> fixed(count * words), kinds(count);
  std::vector<std::int64_t> one(count * words), one_kinds(count);
  for (const auto& operand : operands) {
    fp::encode(operand.data(), count, dtype, codes.data(), one.data(), non_finite ? one_kinds.data() : nullptr);
    for (std::size_t i = 0; i < one.size(); ++i) fixed[i] += static_cast<std::uint64_t>(one[i]);
    if (non_finite)
      for (std::size_t i = 0; i < count; ++i) kinds[i] += static_cast<std::uint64_t>(one_kinds[i]);
  }
  std::vector<std::byte> out(count * util::element_bytes(dtype));
  fp::decode(reinterpret_cast<const std::int64_t*>(fixed.data()),
             non_finite ? reinterpret_cast<const std::int64_t*>(kinds.data()) : nullptr, codes.data(), count, dtype,
             divisor, out.data());
  return out;
}

// The first element whose bits differ, or -1.
long first_difference(const std::vector<std::byte>& a, const std::vector<std::byte>& b, DataType dtype) {
  const std::size_t eb = util::element_bytes(dtype);
  for (std::size_t i = 0; i * eb < a.size(); ++i)
    if (std::memcmp(a.data() + i * eb, b.data() + i * eb, eb) != 0) return static_cast<long>(i);
  return -1;
}

}  // namespace

TEST_CASE("sum_gathered: every copy gives the collective steps' bits") {
  std::mt19937_64 rng(20261202);
  const std::size_t counts[] = {0, 1, 7, 511, 512, 513, 1500};
  for (const DataType dtype : kFloating)
    for (const int n : {1, 2, 3, 5, 8})
      for (const std::size_t count : counts)
        for (const bool non_finite : {false, true}) {
          std::vector<std::vector<std::byte>> operands;
          for (int r = 0; r < n; ++r) operands.push_back(contribution(rng, count, dtype, non_finite && r == n - 1));
          std::vector<const void*> pointers;
          for (const auto& operand : operands) pointers.push_back(operand.data());
          for (const std::size_t divisor : {std::size_t{1}, static_cast<std::size_t>(n) + 1}) {
            const std::vector<std::byte> want = composed(operands, count, dtype, divisor);
            for (const char* copy : kCopies) {
              std::vector<std::byte> got(want.size());
              fp::sum_gathered_with(copy, pointers.data(), n, count, dtype, divisor, got.data());
              const long at = first_difference(got, want, dtype);
              INFO(name(dtype), " n=", n, " count=", count, " non-finite=", non_finite, " divisor=", divisor,
                   " copy=", copy, " element ", at);
              CHECK(at < 0);
            }
          }
        }
}

TEST_CASE("sum_gathered: the output may be the first operand") {
  std::mt19937_64 rng(7);
  for (const DataType dtype : kFloating)
    for (const int n : {2, 3})
      for (const char* copy : kCopies) {
        const std::size_t count = 1300;
        std::vector<std::vector<std::byte>> operands;
        for (int r = 0; r < n; ++r) operands.push_back(contribution(rng, count, dtype, false));
        const std::vector<std::byte> want = composed(operands, count, dtype, 1);
        std::vector<const void*> pointers;
        for (const auto& operand : operands) pointers.push_back(operand.data());
        fp::sum_gathered_with(copy, pointers.data(), n, count, dtype, 1, operands[0].data());
        INFO(name(dtype), " n=", n, " copy=", copy);
        CHECK(first_difference(operands[0], want, dtype) < 0);
      }
}
