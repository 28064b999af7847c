#include "exec/checksum.hpp"

#include <cmath>
#include <cstring>
#include <string_view>

#include "host/reduce_simd.hpp"
#include "util/half.hpp"

namespace strata::exec {
namespace {

#define STRATA_INLINE [[gnu::always_inline]] inline

constexpr int kLanes = 4;          // words hashed side by side
constexpr int kSumLanes = 16;      // doubles summed side by side (four chains of additions per vector unit)
constexpr std::size_t kBlock = 4096;  // elements per block of element_sums (its error bound)

// The lanes as vectors (GCC's vector extensions): each instruction set's
// copy below turns them into its widest registers, and every copy computes
// lane by lane exactly what the scalar definition does, so all give the
// same bits.
// The sums' lanes are vectors of 4 (lanes 0-3, 4-7, ...): GCC keeps a
// 64-byte vector in memory where it spans two AVX2 registers.
typedef std::uint64_t Words __attribute__((vector_size(kLanes * 8)));
constexpr int kQuarter = 4;  // lanes per vector
typedef double Doubles __attribute__((vector_size(kQuarter * 8)));
typedef std::uint64_t DoubleBits __attribute__((vector_size(kQuarter * 8)));
typedef float Floats __attribute__((vector_size(kQuarter * 4)));
typedef std::uint32_t FloatBits __attribute__((vector_size(kQuarter * 4)));
typedef std::uint16_t Halves __attribute__((vector_size(kQuarter * 2)));

// The finaliser of MurmurHash3: a bijection on 64 bits that spreads every
// input bit over the output.
STRATA_INLINE std::uint64_t mix64(std::uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ULL;
  h ^= h >> 33;
  return h;
}

STRATA_INLINE std::uint64_t hash_loop(const void* data, std::size_t bytes) {
  const auto* p = static_cast<const std::byte*>(data);
  Words sum = {}, prefix = {};
  std::size_t i = 0;
  constexpr std::size_t kStride = kLanes * sizeof(std::uint64_t);
  for (; i + kStride <= bytes; i += kStride) {
    Words words;
    std::memcpy(&words, p + i, kStride);
    sum += words;
    prefix += sum;
  }
  Words tail = {};  // the last bytes, zero-padded
  if (bytes > i) std::memcpy(&tail, p + i, bytes - i);  // (data may be null when bytes is 0)
  sum += tail;
  prefix += sum;
  // An odd factor for each sum and an even one for each prefix sum: a flip
  // of bit k in word j of lane l moves the total by ±2^k * (odd + (words
  // after j) * even), an odd multiple of 2^k, never 0.
  std::uint64_t h = bytes * 0x9e3779b97f4a7c15ULL;
  for (int l = 0; l < kLanes; ++l)
    h += sum[l] * (0x2545f4914f6cdd1dULL | 1) + prefix[l] * ((0x94d049bb133111ebULL + 2 * l) & ~1ULL);
  return mix64(h);
}

// Each element as what a sum of it is formed in.
template <typename T>
STRATA_INLINE double as_double(T x) { return static_cast<double>(x); }

struct F16 { std::uint16_t bits; };
struct BF16 { std::uint16_t bits; };
STRATA_INLINE double as_double(F16 x) { return util::f16_to_f32(x.bits); }
STRATA_INLINE double as_double(BF16 x) { return util::bf16_to_f32(x.bits); }
float as_float(F16 x) { return util::f16_to_f32(x.bits); }
float as_float(BF16 x) { return util::bf16_to_f32(x.bits); }
template <typename T>
T as_float(T x) { return x; }

// kQuarter elements from `x` as doubles, lane l holding x[l]. (Vectors
// go by reference: by value they would take a different ABI per copy.)
// (Lane by lane rather than __builtin_convertvector, which GCC 12 splits
// into two half conversions and an insert: one vcvtps2pd does it here.)
static_assert(kQuarter == 4, "widen names each lane");
STRATA_INLINE void widen(const Floats& f, Doubles& v) {
  v = Doubles{static_cast<double>(f[0]), static_cast<double>(f[1]), static_cast<double>(f[2]),
              static_cast<double>(f[3])};
}
STRATA_INLINE void load_lanes(const float* x, Doubles& v) {
  Floats f;
  std::memcpy(&f, x, sizeof f);
  widen(f, v);
}
STRATA_INLINE void load_lanes(const double* x, Doubles& v) { std::memcpy(&v, x, sizeof v); }
STRATA_INLINE void load_lanes(const BF16* x, Doubles& v) {
  Halves h;
  std::memcpy(&h, x, sizeof h);
  const FloatBits bits = __builtin_convertvector(h, FloatBits) << 16;  // util::bf16_to_f32, lane by lane
  Floats f;
  std::memcpy(&f, &bits, sizeof f);
  widen(f, v);
}
STRATA_INLINE void load_lanes(const F16* x, Doubles& v) {  // (no vector conversion without F16C: lane by lane)
  for (int l = 0; l < kQuarter; ++l) v[l] = as_double(x[l]);
}

// `x`'s kQuarter elements added to `sum`, their magnitudes (std::fabs)
// to `magnitude`.
template <typename T>
STRATA_INLINE void add_lanes(const T* x, Doubles& sum, Doubles& magnitude) {
  Doubles v;
  load_lanes(x, v);
  sum += v;
  DoubleBits bits;
  std::memcpy(&bits, &v, sizeof bits);
  bits &= 0x7fffffffffffffffULL;
  std::memcpy(&v, &bits, sizeof v);
  magnitude += v;
}

template <typename T>
STRATA_INLINE ElementSums float_sums(const T* x, std::size_t count) {
  ElementSums sums;
  for (std::size_t begin = 0; begin < count; begin += kBlock) {
    const std::size_t end = begin + kBlock < count ? begin + kBlock : count;
    Doubles sum[kSumLanes / kQuarter] = {}, magnitude[kSumLanes / kQuarter] = {};
    std::size_t i = begin;
    for (; i + kSumLanes <= end; i += kSumLanes)
      for (int q = 0; q < kSumLanes / kQuarter; ++q) add_lanes(x + i + q * kQuarter, sum[q], magnitude[q]);
    // The lanes as plain doubles from here (reading a vector's lanes in the
    // loop would keep it in memory).
    double sum_lanes[kSumLanes], magnitude_lanes[kSumLanes];
    std::memcpy(sum_lanes, sum, sizeof sum_lanes);
    std::memcpy(magnitude_lanes, magnitude, sizeof magnitude_lanes);
    for (; i < end; ++i) {
      const double v = as_double(x[i]);
      sum_lanes[0] += v;
      magnitude_lanes[0] += std::fabs(v);
    }
    for (int l = 0; l < kSumLanes; ++l) {
      sums.sum += sum_lanes[l];
      sums.magnitude += magnitude_lanes[l];
    }
  }
  return sums;
}

template <typename T>
STRATA_INLINE ElementSums integer_sums(const T* x, std::size_t count) {
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
STRATA_INLINE ElementSums integer_sums(const std::uint64_t* x, std::size_t count) {
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

// One instruction set's copy of the two passes. Plain switches rather
// than typed()'s lambda: a lambda's body would not take the copy's target.
#define STRATA_CHECKSUM_KERNELS(isa, target)                                                     \
  target std::uint64_t hash_##isa(const void* data, std::size_t bytes) {                         \
    return hash_loop(data, bytes);                                                               \
  }                                                                                              \
  target ElementSums sums_##isa(const void* data, std::size_t count, DataType dtype) {           \
    switch (dtype) {                                                                             \
      case DataType::f32: return float_sums(static_cast<const float*>(data), count);             \
      case DataType::f64: return float_sums(static_cast<const double*>(data), count);            \
      case DataType::f16: return float_sums(static_cast<const F16*>(data), count);               \
      case DataType::bf16: return float_sums(static_cast<const BF16*>(data), count);             \
      case DataType::i8: return integer_sums(static_cast<const std::int8_t*>(data), count);      \
      case DataType::u8: return integer_sums(static_cast<const std::uint8_t*>(data), count);     \
      case DataType::i32: return integer_sums(static_cast<const std::int32_t*>(data), count);    \
      case DataType::u32: return integer_sums(static_cast<const std::uint32_t*>(data), count);   \
      case DataType::i64: return integer_sums(static_cast<const std::int64_t*>(data), count);    \
      case DataType::u64: break;                                                                 \
    }                                                                                            \
    return integer_sums(static_cast<const std::uint64_t*>(data), count);                         \
  }

struct Kernels {
  std::uint64_t (*hash)(const void*, std::size_t);
  ElementSums (*sums)(const void*, std::size_t, DataType);
};

STRATA_CHECKSUM_KERNELS(baseline, )
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
STRATA_CHECKSUM_KERNELS(avx2, __attribute__((target("avx2"))))
STRATA_CHECKSUM_KERNELS(avx512, __attribute__((target("avx2,avx512f,avx512bw,avx512vl"))))
#endif

Kernels kernels_for(host::simd::Copy copy) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  if (copy == host::simd::Copy::avx512) return {&hash_avx512, &sums_avx512};
  if (copy == host::simd::Copy::avx2) return {&hash_avx2, &sums_avx2};
#endif
  (void)copy;
  return {&hash_baseline, &sums_baseline};
}

// The copy for the instruction set the reduction kernels run
// (host::simd::chosen(): STRATA_REDUCE_ISA, else the widest this CPU has).
const Kernels& kernels() {
  static const Kernels chosen = kernels_for(host::simd::chosen_copy());
  return chosen;
}

}  // namespace

std::uint64_t hash_bytes(const void* data, std::size_t bytes) { return kernels().hash(data, bytes); }

ElementSums element_sums(const void* data, std::size_t count, DataType dtype) {
  return kernels().sums(data, count, dtype);
}

std::uint64_t hash_bytes_with(std::string_view isa, const void* data, std::size_t bytes) {
  return kernels_for(host::simd::copy_for(isa)).hash(data, bytes);
}

ElementSums element_sums_with(std::string_view isa, const void* data, std::size_t count, DataType dtype) {
  return kernels_for(host::simd::copy_for(isa)).sums(data, count, dtype);
}

double sum_error_bound(std::size_t count) {
  // Per block, each of the kSumLanes lanes adds up to kBlock / kSumLanes terms, then the lanes
  // and the blocks are added: at most kBlock / kSumLanes + kSumLanes + count / kBlock + 1
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
