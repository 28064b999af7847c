// host::reduce_into and host::divide_by, the inner loop of every host
// algorithm, for every dtype x op against a plain scalar reference:
// integers wrap (two's complement), f16/bf16 are computed in f32 and
// rounded once, NaN passes through min/max, mean's integer division
// truncates toward zero. And every reduction kernel this machine can run
// (host/reduce_simd.hpp) gives the baseline kernel's bits.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <tuple>
#include <type_traits>
#include <vector>

#include "half_reference.hpp"
#include "host/reduce_kernel.hpp"
#include "host/reduce_simd.hpp"

using strata::DataType;
using strata::ReduceOp;
namespace host = strata::host;
namespace ref = strata::test;

namespace {

// Storage types; f16 and bf16 are stored as their bit patterns.
struct F16 { std::uint16_t bits; };
struct BF16 { std::uint16_t bits; };

template <typename T> constexpr DataType dtype_of();
template <> constexpr DataType dtype_of<float>() { return DataType::f32; }
template <> constexpr DataType dtype_of<double>() { return DataType::f64; }
template <> constexpr DataType dtype_of<F16>() { return DataType::f16; }
template <> constexpr DataType dtype_of<BF16>() { return DataType::bf16; }
template <> constexpr DataType dtype_of<std::int8_t>() { return DataType::i8; }
template <> constexpr DataType dtype_of<std::uint8_t>() { return DataType::u8; }
template <> constexpr DataType dtype_of<std::int32_t>() { return DataType::i32; }
template <> constexpr DataType dtype_of<std::uint32_t>() { return DataType::u32; }
template <> constexpr DataType dtype_of<std::int64_t>() { return DataType::i64; }
template <> constexpr DataType dtype_of<std::uint64_t>() { return DataType::u64; }

// Calls fn.template operator()<T>() for every storage type above, in dtype order.
template <typename Fn>
void for_each_element_type(Fn&& fn) {
  [&]<typename... T>(std::type_identity<std::tuple<T...>>) { (fn.template operator()<T>(), ...); }(
      std::type_identity<std::tuple<float, double, F16, BF16, std::int8_t, std::uint8_t, std::int32_t, std::uint32_t,
                                    std::int64_t, std::uint64_t>>{});
}

float load(F16 v) { return ref::ref_f16_to_f32(v.bits); }
float load(BF16 v) { return ref::ref_bf16_to_f32(v.bits); }
F16 store_f16(float f) { return {ref::ref_f32_to_f16(f)}; }
BF16 store_bf16(float f) {
  if (std::isnan(f)) return {0x7fc0};
  return {ref::ref_f32_to_bf16(f)};
}

template <typename T>
bool same_bits(const T& a, const T& b) {
  return std::memcmp(&a, &b, sizeof(T)) == 0;
}
template <typename T>
bool same_value(const T& a, const T& b) {
  if constexpr (std::is_same_v<T, F16>) {
    return a.bits == b.bits || (std::isnan(load(a)) && std::isnan(load(b)));
  } else if constexpr (std::is_same_v<T, BF16>) {
    return a.bits == b.bits || (std::isnan(load(a)) && std::isnan(load(b)));
  } else if constexpr (std::is_floating_point_v<T>) {
    return same_bits(a, b) || (std::isnan(a) && std::isnan(b));
  } else {
    return a == b;
  }
}

// The scalar reference for one element.
template <typename T>
T reference(ReduceOp op, T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    // Wide unsigned arithmetic is exact modulo 2^64; truncating gives the
    // two's complement wrap-around the kernel promises.
    const auto wa = static_cast<std::uint64_t>(static_cast<std::int64_t>(a)),
               wb = static_cast<std::uint64_t>(static_cast<std::int64_t>(b));
    switch (op) {
      case ReduceOp::sum: return static_cast<T>(wa + wb);
      case ReduceOp::prod: return static_cast<T>(wa * wb);
      case ReduceOp::min: return a < b ? a : b;
      case ReduceOp::max: return a > b ? a : b;
      default: break;
    }
    return a;
  } else if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<T>::quiet_NaN();
    switch (op) {
      case ReduceOp::sum: return a + b;
      case ReduceOp::prod: return a * b;
      // As lib/host/reduce_kernel.cpp's apply: of equal operands the first
      // is kept, so min(+0, -0) is +0 and min(-0, +0) is -0, bit for bit.
      // Not std::fmin/fmax: C leaves which zero they return unspecified, so
      // the reference would depend on the libm and the compiler.
      case ReduceOp::min: return b < a ? b : a;
      case ReduceOp::max: return b > a ? b : a;
      default: break;
    }
    return a;
  } else {
    const float r = reference<float>(op, load(a), load(b));  // in f32, then rounded once
    if constexpr (std::is_same_v<T, F16>) return store_f16(r); else return store_bf16(r);
  }
}

// Interesting values of each type: extremes, zeros, +-1, small, random.
template <typename T>
std::vector<T> sample_values(std::mt19937_64& rng) {
  std::vector<T> values;
  if constexpr (std::is_integral_v<T>) {
    using L = std::numeric_limits<T>;
    values = {L::min(), L::max(), T(0), T(1), T(2), T(L::max() / 2), T(L::min() + 1)};
    if constexpr (std::is_signed_v<T>)
      for (int v : {-1, -2, -7}) values.push_back(T(v));  // (insert() trips a g++ 12 false -Warray-bounds)
    for (int i = 0; i < 40; ++i) values.push_back(static_cast<T>(rng()));
  } else if constexpr (std::is_floating_point_v<T>) {
    using L = std::numeric_limits<T>;
    values = {T(0), T(-0.0), T(1), T(-1), T(0.1), T(-3.5), L::max(), L::lowest(), L::denorm_min(),
              L::infinity(), -L::infinity(), L::quiet_NaN()};
    for (T tiny : {L::min(), T(3) * L::min(), T(-5) * L::min()}) values.push_back(tiny);  // quotients go subnormal
    std::normal_distribution<T> normal(0, 100);
    for (int i = 0; i < 40; ++i) values.push_back(normal(rng));
  } else {
    for (std::uint16_t bits : {0x0000, 0x8000, 0x3c00, 0xbc00, 0x7bff, 0xfbff, 0x0001, 0x7c00, 0xfc00, 0x7e00,
                               0x3f80, 0x7f7f, 0x7f80, 0x7fc0, 0x3555, 0x4900})
      values.push_back(T{bits});
    for (int i = 0; i < 40; ++i) values.push_back(T{static_cast<std::uint16_t>(rng())});
  }
  return values;
}

template <typename T>
void check_reduce_all_ops() {
  constexpr DataType dtype = dtype_of<T>();
  CAPTURE(strata::to_string(dtype));
  std::mt19937_64 rng(static_cast<unsigned>(dtype) + 1);
  const std::vector<T> values = sample_values<T>(rng);
  // Every pair of sample values, as two arrays.
  std::vector<T> a, b;
  for (const T& x : values)
    for (const T& y : values) a.push_back(x), b.push_back(y);
  for (ReduceOp op : {ReduceOp::sum, ReduceOp::prod, ReduceOp::min, ReduceOp::max}) {
    CAPTURE(strata::to_string(op));
    std::vector<T> out(a.size());
    host::reduce_into(out.data(), a.data(), b.data(), a.size(), dtype, op);
    int bad = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
      const T want = reference<T>(op, a[i], b[i]);
      if (!same_value(out[i], want) && ++bad <= 5) FAIL_CHECK("element " << i << " differs from the reference");
    }
    CHECK(bad == 0);
    // dst may alias a or b exactly.
    std::vector<T> alias_a = a, alias_b = b;
    host::reduce_into(alias_a.data(), alias_a.data(), b.data(), a.size(), dtype, op);
    host::reduce_into(alias_b.data(), a.data(), alias_b.data(), a.size(), dtype, op);
    CHECK(std::memcmp(alias_a.data(), out.data(), out.size() * sizeof(T)) == 0);
    CHECK(std::memcmp(alias_b.data(), out.data(), out.size() * sizeof(T)) == 0);
  }
  // count 0 touches nothing.
  T sentinel = values[1];
  host::reduce_into(&sentinel, nullptr, nullptr, 0, dtype, ReduceOp::sum);
  CHECK(same_bits(sentinel, values[1]));
}

// Every usable kernel against the baseline, bit for bit (NaN payloads
// included): every pair of sample values, at every length up to a few
// vectors and beyond (the vector loops' tails), at element offsets 0-3
// (unaligned), out of place and in place on either operand.
template <typename T>
void check_kernels_agree(const host::simd::Kernel& kernel) {
  constexpr DataType dtype = dtype_of<T>();
  CAPTURE(strata::to_string(dtype));
  std::mt19937_64 rng(200 + static_cast<unsigned>(dtype));
  const std::vector<T> values = sample_values<T>(rng);
  std::vector<T> a, b;
  for (const T& x : values)
    for (const T& y : values) a.push_back(x), b.push_back(y);
  const host::simd::Kernel& baseline = host::simd::usable().front();
  std::vector<std::size_t> lengths;
  for (std::size_t n = 0; n <= 70; ++n) lengths.push_back(n);
  for (std::size_t n : {127, 128, 129, 255, 257, 1000}) lengths.push_back(n);
  lengths.push_back(a.size() - 3);
  for (ReduceOp op : {ReduceOp::sum, ReduceOp::prod, ReduceOp::min, ReduceOp::max}) {
    CAPTURE(strata::to_string(op));
    int bad = 0;
    for (std::size_t offset = 0; offset < 4; ++offset) {
      for (std::size_t n : lengths) {
        const T* x = a.data() + offset;
        const T* y = b.data() + offset;
        std::vector<T> want(n + 2, values[1]), got(n + 2, values[1]);  // one guard element each side
        baseline.reduce(want.data() + 1, x, y, n, dtype, op);
        kernel.reduce(got.data() + 1, x, y, n, dtype, op);
        std::vector<T> in_a(x, x + n), in_b(y, y + n);
        kernel.reduce(in_a.data(), in_a.data(), y, n, dtype, op);
        kernel.reduce(in_b.data(), x, in_b.data(), n, dtype, op);
        const bool same = std::memcmp(got.data(), want.data(), got.size() * sizeof(T)) == 0 &&
                          (n == 0 || (std::memcmp(in_a.data(), want.data() + 1, n * sizeof(T)) == 0 &&
                                      std::memcmp(in_b.data(), want.data() + 1, n * sizeof(T)) == 0));
        if (!same && ++bad <= 3) FAIL_CHECK(kernel.name << " differs from the baseline at length " << n << ", offset "
                                                       << offset);
      }
    }
    CHECK(bad == 0);
  }
  // mean's division: powers of two (a multiply by the reciprocal) and not.
  int bad = 0;
  for (std::size_t divisor : {std::size_t{1}, std::size_t{2}, std::size_t{3}, std::size_t{7}, std::size_t{8},
                              std::size_t{1000}, std::size_t{1024}, std::size_t{1} << 40, std::size_t{1} << 63}) {
    for (std::size_t offset = 0; offset < 4; ++offset) {
      for (std::size_t n : lengths) {
        std::vector<T> want(a.begin() + offset, a.begin() + offset + n), got = want;
        baseline.divide(want.data(), n, dtype, divisor);
        kernel.divide(got.data(), n, dtype, divisor);
        if (n > 0 && std::memcmp(got.data(), want.data(), n * sizeof(T)) != 0 && ++bad <= 3)  // (an empty vector's data may be null)
          FAIL_CHECK(kernel.name << "'s division by " << divisor << " differs from the baseline at length " << n);
      }
    }
  }
  CHECK(bad == 0);
}

template <typename T>
void check_divide() {
  constexpr DataType dtype = dtype_of<T>();
  CAPTURE(strata::to_string(dtype));
  std::mt19937_64 rng(100 + static_cast<unsigned>(dtype));
  const std::vector<T> values = sample_values<T>(rng);
  for (std::size_t divisor : {std::size_t{1}, std::size_t{2}, std::size_t{3}, std::size_t{7}, std::size_t{8},
                              std::size_t{1000}, std::size_t{1024}, std::size_t{1} << 40, std::size_t{1} << 63}) {
    CAPTURE(divisor);
    std::vector<T> data = values;
    host::divide_by(data.data(), data.size(), dtype, divisor);
    for (std::size_t i = 0; i < values.size(); ++i) {
      T want;
      if constexpr (std::is_integral_v<T>) {
        // C++ integer division truncates toward zero; divide in a wide type
        // so that a divisor outside T's range is not truncated first.
        if constexpr (std::is_signed_v<T>) want = T(static_cast<long long>(values[i]) / static_cast<long long>(divisor));
        else want = T(static_cast<unsigned long long>(values[i]) / divisor);
      } else if constexpr (std::is_floating_point_v<T>) {
        want = values[i] / static_cast<T>(divisor);
      } else {
        const float q = load(values[i]) / static_cast<float>(divisor);
        if constexpr (std::is_same_v<T, F16>) want = store_f16(q); else want = store_bf16(q);
      }
      CAPTURE(i);
      // f32 and f64 bit for bit, NaNs included: a power-of-two divisor is
      // a multiply by the reciprocal, which must round exactly as dividing.
      if constexpr (std::is_floating_point_v<T>) CHECK(same_bits(data[i], want));
      else CHECK(same_value(data[i], want));
    }
  }
}

}  // namespace

TEST_CASE("reduce_into: every dtype x op against the scalar reference") {
  for_each_element_type([]<typename T>() { check_reduce_all_ops<T>(); });
}

TEST_CASE("every reduction kernel this machine runs gives the baseline's bits, reducing and dividing") {
  const auto kernels = host::simd::usable();
  REQUIRE(!kernels.empty());
  CHECK(kernels.front().name == "baseline");
  MESSAGE("kernels usable here: " << kernels.size() << ", chosen: " << host::simd::chosen().name);
  for (const host::simd::Kernel& kernel : kernels) {
    CAPTURE(kernel.name);
    for_each_element_type([&]<typename T>() { check_kernels_agree<T>(kernel); });
  }
}

TEST_CASE("reduce_into runs the chosen kernel: the widest usable one unless STRATA_REDUCE_ISA names another") {
  const auto kernels = host::simd::usable();
  const char* env = std::getenv("STRATA_REDUCE_ISA");
  bool named_usable = false;
  for (const host::simd::Kernel& k : kernels) named_usable = named_usable || (env && k.name == env);
  if (named_usable) {
    CHECK(host::simd::chosen().name == env);
    CHECK(host::simd::unheeded().empty());
  } else {
    CHECK(host::simd::chosen().name == kernels.back().name);
    CHECK(host::simd::unheeded().empty() == !(env && *env));
  }
}

TEST_CASE("reduce_into: integer sum and prod wrap around instead of saturating") {
  std::int8_t a8[] = {127, -128, 100, -1}, b8[] = {1, -1, 100, -128}, o8[4];
  host::reduce_into(o8, a8, b8, 4, DataType::i8, ReduceOp::sum);
  CHECK(o8[0] == -128);
  CHECK(o8[1] == 127);
  CHECK(o8[2] == -56);
  CHECK(o8[3] == 127);
  host::reduce_into(o8, a8, b8, 4, DataType::i8, ReduceOp::prod);
  CHECK(o8[0] == 127);
  CHECK(o8[1] == -128);  // -128 * -1 = 128 wraps to -128
  CHECK(o8[2] == 16);    // 10000 mod 256
  CHECK(o8[3] == -128);
  std::uint32_t a32[] = {0xffffffffu}, b32[] = {2}, o32[1];
  host::reduce_into(o32, a32, b32, 1, DataType::u32, ReduceOp::sum);
  CHECK(o32[0] == 1u);
  std::int64_t a64[] = {std::numeric_limits<std::int64_t>::max()}, b64[] = {2}, o64[1];
  host::reduce_into(o64, a64, b64, 1, DataType::i64, ReduceOp::prod);
  CHECK(o64[0] == -2);
}

TEST_CASE("reduce_into: NaN passes through min and max in either position") {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  float a[] = {nan, 1.0f}, b[] = {1.0f, nan}, out[2];
  for (ReduceOp op : {ReduceOp::min, ReduceOp::max, ReduceOp::sum}) {
    host::reduce_into(out, a, b, 2, DataType::f32, op);
    CHECK(std::isnan(out[0]));
    CHECK(std::isnan(out[1]));
  }
  std::uint16_t h_a[] = {0x7e00, 0x3c00}, h_b[] = {0x3c00, 0x7e00}, h_out[2];
  host::reduce_into(h_out, h_a, h_b, 2, DataType::f16, ReduceOp::min);
  CHECK(std::isnan(ref::ref_f16_to_f32(h_out[0])));
  CHECK(std::isnan(ref::ref_f16_to_f32(h_out[1])));
}

TEST_CASE("reduce_into: min and max of +0 and -0 keep the first operand, bit for bit") {
  const float zeros_a[] = {0.0f, -0.0f}, zeros_b[] = {-0.0f, 0.0f};
  for (ReduceOp op : {ReduceOp::min, ReduceOp::max}) {
    CAPTURE(strata::to_string(op));
    float out[2];
    host::reduce_into(out, zeros_a, zeros_b, 2, DataType::f32, op);
    CHECK(!std::signbit(out[0]));
    CHECK(std::signbit(out[1]));
    std::uint16_t h_a[] = {0x0000, 0x8000}, h_b[] = {0x8000, 0x0000}, h_out[2];
    for (DataType dtype : {DataType::f16, DataType::bf16}) {
      host::reduce_into(h_out, h_a, h_b, 2, dtype, op);
      CHECK(h_out[0] == 0x0000);
      CHECK(h_out[1] == 0x8000);
    }
  }
}

TEST_CASE("reduce_into: f16 and bf16 round once from f32") {
  // 1 + 2^-11 is a tie in f16: the f32 sum is exact, one rounding gives 1.
  std::uint16_t a[] = {0x3c00, 0x3c00}, b[] = {0x1000 /* 2^-11 */, 0x1200 /* 1.5 * 2^-11 */}, out[2];
  host::reduce_into(out, a, b, 2, DataType::f16, ReduceOp::sum);
  CHECK(out[0] == 0x3c00);
  CHECK(out[1] == 0x3c01);
  // bf16: 256 + 1 is a tie (8 significant bits), rounds to even (256).
  std::uint16_t c[] = {0x4380 /* 256 */}, d[] = {0x3f80 /* 1 */}, out16[1];
  host::reduce_into(out16, c, d, 1, DataType::bf16, ReduceOp::sum);
  CHECK(out16[0] == 0x4380);
}

TEST_CASE("divide_by: every dtype; integers truncate toward zero") {
  for_each_element_type([]<typename T>() { check_divide<T>(); });
}

TEST_CASE("divide_by: mean of negative integers truncates toward zero, not down") {
  std::int32_t v[] = {-7, 7, -1, -8, std::numeric_limits<std::int32_t>::min()};
  host::divide_by(v, 5, DataType::i32, 2);
  CHECK(v[0] == -3);
  CHECK(v[1] == 3);
  CHECK(v[2] == 0);
  CHECK(v[3] == -4);
  CHECK(v[4] == std::numeric_limits<std::int32_t>::min() / 2);
  std::int8_t w[] = {-128, -5, 127};
  host::divide_by(w, 3, DataType::i8, 3);
  CHECK(w[0] == -42);
  CHECK(w[1] == -1);
  CHECK(w[2] == 42);
  std::int8_t x[] = {-100};
  host::divide_by(x, 1, DataType::i8, 1000);  // divisor beyond the dtype's range
  CHECK(x[0] == 0);
  std::uint8_t y[] = {255};
  host::divide_by(y, 1, DataType::u8, 256);
  CHECK(y[0] == 0);
}
