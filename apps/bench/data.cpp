// Pattern values, exact references and typed loads/stores for every dtype.
#include "data.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace bench {
namespace {

using strata::DataType;
using strata::ReduceOp;

// The pattern repeats with this period: prime, so its phase never lines up
// with power-of-two chunk or shard boundaries (a chunk landing at the wrong
// offset changes the values).
constexpr std::size_t kPeriod = 251;

std::uint16_t float_to_half(float f) {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  const std::uint32_t sign = (x >> 16) & 0x8000u;
  const int exp = static_cast<int>((x >> 23) & 0xffu) - 127 + 15;
  std::uint32_t mant = x & 0x7fffffu;
  if (((x >> 23) & 0xffu) == 0xffu) return static_cast<std::uint16_t>(sign | 0x7c00u | (mant ? 0x200u : 0));
  if (exp >= 31) return static_cast<std::uint16_t>(sign | 0x7c00u);
  if (exp <= 0) {  // subnormal half
    if (exp < -10) return static_cast<std::uint16_t>(sign);
    mant |= 0x800000u;
    const int shift = 14 - exp;
    std::uint32_t h = mant >> shift;
    const std::uint32_t rem = mant & ((1u << shift) - 1), halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (h & 1u))) ++h;
    return static_cast<std::uint16_t>(sign | h);
  }
  std::uint32_t h = sign | (static_cast<std::uint32_t>(exp) << 10) | (mant >> 13);
  const std::uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;  // a carry into the exponent is still right
  return static_cast<std::uint16_t>(h);
}

float half_to_float(std::uint16_t h) {
  const std::uint32_t sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  if (exp == 0) {
    const float v = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -v : v;
  }
  const std::uint32_t bits = exp == 31 ? (sign | 0x7f800000u | (mant << 13)) : (sign | ((exp - 15 + 127) << 23) | (mant << 13));
  return std::bit_cast<float>(bits);
}

std::uint16_t float_to_bf16(float f) {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  return static_cast<std::uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}
float bf16_to_float(std::uint16_t b) { return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16); }

// Calls f(T{}) with the storage type of `dtype` (uint16_t for f16 and bf16).
template <typename F>
void with_type(DataType dtype, F&& f) {
  switch (dtype) {
    case DataType::f32: return f(float{});
    case DataType::f64: return f(double{});
    case DataType::f16:
    case DataType::bf16: return f(std::uint16_t{});
    case DataType::i8: return f(std::int8_t{});
    case DataType::u8: return f(std::uint8_t{});
    case DataType::i32: return f(std::int32_t{});
    case DataType::u32: return f(std::uint32_t{});
    case DataType::i64: return f(std::int64_t{});
    case DataType::u64: return f(std::uint64_t{});
  }
}

template <typename T>
T store(DataType dtype, double v) {
  if constexpr (std::is_same_v<T, std::uint16_t>)
    return dtype == DataType::f16 ? float_to_half(static_cast<float>(v)) : float_to_bf16(static_cast<float>(v));
  else
    return static_cast<T>(v);
}

template <typename T>
double load(DataType dtype, T v) {
  if constexpr (std::is_same_v<T, std::uint16_t>)
    return dtype == DataType::f16 ? half_to_float(v) : bf16_to_float(v);
  else
    return static_cast<double>(v);
}

bool is_float(DataType d) { return d == DataType::f32 || d == DataType::f64 || d == DataType::f16 || d == DataType::bf16; }
bool is_unsigned(DataType d) { return d == DataType::u8 || d == DataType::u32 || d == DataType::u64; }

// The largest integer magnitude the dtype holds exactly (capped: the point
// is small integers, not range tests).
long long exact_limit(DataType d) {
  switch (d) {
    case DataType::f16: return 2048;
    case DataType::bf16: return 256;
    case DataType::i8: return 127;
    case DataType::u8: return 255;
    default: return 1 << 20;
  }
}

// Machine epsilon: the one rounding mean is allowed on floating types.
double epsilon(DataType d) {
  switch (d) {
    case DataType::f16: return std::ldexp(1.0, -10);
    case DataType::bf16: return std::ldexp(1.0, -7);
    case DataType::f32: return std::ldexp(1.0, -23);
    case DataType::f64: return std::ldexp(1.0, -52);
    default: return 0;
  }
}

// What the dtype stores for the exact value v (rounds floats, truncates
// integer mean toward zero as strata does).
double representable(DataType d, double v) {
  double out = 0;
  with_type(d, [&](auto t) { out = load(d, store<decltype(t)>(d, is_float(d) ? v : std::trunc(v))); });
  return out;
}

}  // namespace

Pattern::Pattern(DataType dtype, ReduceOp op, int nranks, int broadcast_root)
    : dtype_(dtype), op_(op), nranks_(nranks) {
  const bool summing = broadcast_root < 0 && (op == ReduceOp::sum || op == ReduceOp::mean);
  // Sums of n values of magnitude <= bound stay exact; min/max only need
  // distinct values; prod uses +-1 and +-2 (below).
  bound_ = summing ? std::min<long long>(1000, exact_limit(dtype) / nranks) : 100;
  sparse_ = bound_ < 1;
  tolerance_ = op == ReduceOp::mean && broadcast_root < 0 ? epsilon(dtype) : 0;

  expected_.resize(kPeriod);
  for (std::size_t j = 0; j < kPeriod; ++j) {
    if (broadcast_root >= 0) {
      expected_[j] = contribution(broadcast_root, j);
      continue;
    }
    double acc = contribution(0, j);
    for (int r = 1; r < nranks; ++r) {
      const double v = contribution(r, j);
      switch (op) {
        case ReduceOp::sum:
        case ReduceOp::mean: acc += v; break;
        case ReduceOp::min: acc = std::min(acc, v); break;
        case ReduceOp::max: acc = std::max(acc, v); break;
        case ReduceOp::prod: acc *= v; break;
      }
    }
    expected_[j] = op == ReduceOp::mean ? representable(dtype, acc / nranks) : acc;
  }
}

double Pattern::contribution(int rank, std::size_t j) const {
  const auto r = static_cast<long long>(rank), jj = static_cast<long long>(j);
  if (op_ == ReduceOp::prod) {
    // At most one rank contributes 2 per element, so products stay tiny.
    const double magnitude = r == jj % nranks_ ? 2 : 1;
    const bool negative = !is_unsigned(dtype_) && (jj + r) % 5 == 0;
    return negative ? -magnitude : magnitude;
  }
  if (sparse_) return r == jj % nranks_ ? static_cast<double>((jj * 7 + 3) % 5 + 1) : 0;
  const long long mix = jj * 7 + r * 13 + 3;
  if (is_unsigned(dtype_)) return static_cast<double>(mix % (bound_ + 1));
  return static_cast<double>(mix % (2 * bound_ + 1) - bound_);
}

void Pattern::fill(int rank, void* data, std::size_t count, std::size_t offset) const {
  with_type(dtype_, [&](auto t) {
    using T = decltype(t);
    // Store one period, then tile it: cheap even for gigabyte batches.
    T period[kPeriod];
    for (std::size_t j = 0; j < kPeriod; ++j) period[j] = store<T>(dtype_, contribution(rank, j));
    T* out = static_cast<T*>(data);
    for (std::size_t i = 0; i < count; ++i) out[i] = period[(i + offset) % kPeriod];
  });
}

std::size_t Pattern::count_wrong(const void* data, std::size_t count, std::size_t offset) const {
  std::size_t wrong = 0;
  with_type(dtype_, [&](auto t) {
    using T = decltype(t);
    const T* in = static_cast<const T*>(data);
    for (std::size_t i = 0; i < count; ++i) {
      const double want = expected_[(i + offset) % kPeriod];
      const double got = load(dtype_, in[i]);
      // NaN fails both comparisons, so it counts as wrong.
      const bool ok = tolerance_ == 0 ? got == want : std::fabs(got - want) <= tolerance_ * std::fabs(want);
      wrong += ok ? 0 : 1;
    }
  });
  return wrong;
}

void fill_poison(void* data, std::size_t count, DataType dtype) {
  // 0x5b bytes: a huge float (or a large integer), never a pattern result
  // for floats and rarely one for 8-bit integers.
  std::memset(data, 0x5b, count * strata::dtype_size(dtype));
}

void corrupt_one(void* data, std::size_t count, DataType dtype) {
  if (count == 0) return;
  const std::size_t size = strata::dtype_size(dtype);
  // Bit 6 of the most significant byte (little endian): an exponent bit for
  // floats, 2^(8*size-2) for integers -- far outside any tolerance.
  static_cast<unsigned char*>(data)[(count / 2) * size + size - 1] ^= 0x40;
}

}  // namespace bench
