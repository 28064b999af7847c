#include "exec/checksum.hpp"

#include <cmath>
#include <cstring>

#include "util/half.hpp"

namespace strata::exec {
namespace {

constexpr int kLanes = 4;          // words hashed side by side
constexpr int kSumLanes = 8;       // doubles summed side by side
constexpr std::size_t kBlock = 4096;  // elements per block of element_sums (its error bound)

// The finaliser of MurmurHash3: a bijection on 64 bits that spreads every
// input bit over the output.
std::uint64_t mix64(std::uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ULL;
  h ^= h >> 33;
  return h;
}

// Each element as what a sum of it is formed in.
template <typename T>
double as_double(T x) { return static_cast<double>(x); }

struct F16 { std::uint16_t bits; };
struct BF16 { std::uint16_t bits; };
double as_double(F16 x) { return util::f16_to_f32(x.bits); }
double as_double(BF16 x) { return util::bf16_to_f32(x.bits); }
float as_float(F16 x) { return util::f16_to_f32(x.bits); }
float as_float(BF16 x) { return util::bf16_to_f32(x.bits); }
template <typename T>
T as_float(T x) { return x; }

template <typename T>
ElementSums float_sums(const T* x, std::size_t count) {
  ElementSums sums;
  for (std::size_t begin = 0; begin < count; begin += kBlock) {
    const std::size_t end = begin + kBlock < count ? begin + kBlock : count;
    double sum[kSumLanes] = {}, magnitude[kSumLanes] = {};
    std::size_t i = begin;
    for (; i + kSumLanes <= end; i += kSumLanes)
      for (int l = 0; l < kSumLanes; ++l) {
        const double v = as_double(x[i + static_cast<std::size_t>(l)]);
        sum[l] += v;
        magnitude[l] += std::fabs(v);
      }
    for (; i < end; ++i) {
      const double v = as_double(x[i]);
      sum[0] += v;
      magnitude[0] += std::fabs(v);
    }
    for (int l = 0; l < kSumLanes; ++l) {
      sums.sum += sum[l];
      sums.magnitude += magnitude[l];
    }
  }
  return sums;
}

template <typename T>
ElementSums integer_sums(const T* x, std::size_t count) {
  std::uint64_t lanes[kSumLanes] = {};
  std::size_t i = 0;
  for (; i + kSumLanes <= count; i += kSumLanes)
    for (int l = 0; l < kSumLanes; ++l)
      lanes[l] += static_cast<std::uint64_t>(static_cast<std::int64_t>(x[i + static_cast<std::size_t>(l)]));
  for (; i < count; ++i) lanes[0] += static_cast<std::uint64_t>(static_cast<std::int64_t>(x[i]));
  ElementSums sums;
  for (std::uint64_t lane : lanes) sums.wrapping += lane;
  return sums;
}

// Unsigned elements zero-extend (the cast through int64 would too, but say it).
template <>
ElementSums integer_sums(const std::uint64_t* x, std::size_t count) {
  ElementSums sums;
  for (std::size_t i = 0; i < count; ++i) sums.wrapping += x[i];
  return sums;
}

template <typename T>
OrderCheck order(const T* own, const T* result, std::size_t count, bool max) {
  OrderCheck check;
  for (std::size_t i = 0; i < count; ++i) {
    const auto a = as_float(own[i]);
    const auto r = as_float(result[i]);
    const bool own_nan = a != a, result_nan = r != r;
    const bool wrong = own_nan ? !result_nan : !result_nan && (max ? r < a : r > a);
    check.violations += wrong;
    check.equal += own_nan ? result_nan : r == a;
  }
  return check;
}

// Calls `f` with the buffer typed by `dtype`.
template <typename F>
auto typed(DataType dtype, const void* data, F&& f) {
  switch (dtype) {
    case DataType::f32: return f(static_cast<const float*>(data));
    case DataType::f64: return f(static_cast<const double*>(data));
    case DataType::f16: return f(static_cast<const F16*>(data));
    case DataType::bf16: return f(static_cast<const BF16*>(data));
    case DataType::i8: return f(static_cast<const std::int8_t*>(data));
    case DataType::u8: return f(static_cast<const std::uint8_t*>(data));
    case DataType::i32: return f(static_cast<const std::int32_t*>(data));
    case DataType::u32: return f(static_cast<const std::uint32_t*>(data));
    case DataType::i64: return f(static_cast<const std::int64_t*>(data));
    case DataType::u64: break;
  }
  return f(static_cast<const std::uint64_t*>(data));
}

template <typename T>
constexpr bool is_float_v = std::is_floating_point_v<T> || std::is_same_v<T, F16> || std::is_same_v<T, BF16>;

}  // namespace

std::uint64_t hash_bytes(const void* data, std::size_t bytes) {
  const auto* p = static_cast<const std::byte*>(data);
  std::uint64_t sum[kLanes] = {}, prefix[kLanes] = {};
  std::size_t i = 0;
  constexpr std::size_t kStride = kLanes * sizeof(std::uint64_t);
  for (; i + kStride <= bytes; i += kStride) {
    std::uint64_t words[kLanes];
    std::memcpy(words, p + i, kStride);
    for (int l = 0; l < kLanes; ++l) {
      sum[l] += words[l];
      prefix[l] += sum[l];
    }
  }
  std::uint64_t tail[kLanes] = {};  // the last bytes, zero-padded
  std::memcpy(tail, p + i, bytes - i);
  for (int l = 0; l < kLanes; ++l) {
    sum[l] += tail[l];
    prefix[l] += sum[l];
  }
  // An odd factor for each sum and an even one for each prefix sum: a flip
  // of bit k in word j of lane l moves the total by ±2^k * (odd + (words
  // after j) * even), an odd multiple of 2^k, never 0.
  std::uint64_t h = bytes * 0x9e3779b97f4a7c15ULL;
  for (int l = 0; l < kLanes; ++l)
    h += sum[l] * (0x2545f4914f6cdd1dULL | 1) + prefix[l] * ((0x94d049bb133111ebULL + 2 * l) & ~1ULL);
  return mix64(h);
}

ElementSums element_sums(const void* data, std::size_t count, DataType dtype) {
  return typed(dtype, data, [count](const auto* x) {
    using T = std::remove_cv_t<std::remove_pointer_t<decltype(x)>>;
    if constexpr (is_float_v<T>) return float_sums(x, count);
    else return integer_sums(x, count);
  });
}

double sum_error_bound(std::size_t count) {
  // Per block, each of 8 lanes adds up to kBlock / 8 terms, then the lanes
  // and the blocks are added: at most kBlock / 8 + 8 + count / kBlock + 1
  // roundings of 2^-53 on any term's path (first order; doubled for margin).
  return 2.0 * (static_cast<double>(kBlock / kSumLanes + kSumLanes + 1) + static_cast<double>(count / kBlock)) *
         0x1p-53;
}

OrderCheck check_order(const void* own, const void* result, std::size_t count, DataType dtype, ReduceOp op) {
  return typed(dtype, own, [&](const auto* mine) {
    using T = std::remove_cv_t<std::remove_pointer_t<decltype(mine)>>;
    return order(mine, static_cast<const T*>(result), count, op == ReduceOp::max);
  });
}

}  // namespace strata::exec
