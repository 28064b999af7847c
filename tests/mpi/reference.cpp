#include "reference.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <sstream>

namespace strata::test {
namespace {

std::uint64_t mix(std::uint64_t x) {  // splitmix64's finaliser
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

bool is_float(DataType d) {
  return d == DataType::f32 || d == DataType::f64 || d == DataType::f16 || d == DataType::bf16;
}
bool is_signed_int(DataType d) {
  return d == DataType::i8 || d == DataType::i32 || d == DataType::i64;
}
unsigned width_bits(DataType d) {
  switch (d) {
    case DataType::i8: case DataType::u8: return 8;
    case DataType::f16: case DataType::bf16: return 16;
    case DataType::f32: case DataType::i32: case DataType::u32: return 32;
    default: return 64;
  }
}
std::size_t width_bytes(DataType d) { return width_bits(d) / 8; }

// A small integer in [-15, 15] (or {-1, 1, 2} for prod, with 2 rare).
std::int64_t small_value(std::uint64_t h, ReduceOp op) {
  if (op == ReduceOp::prod) {
    const unsigned r = h % 8;
    return r == 0 ? 2 : r <= 3 ? -1 : 1;
  }
  return static_cast<std::int64_t>(h % 31) - 15;
}

// Rank `rank`'s element `index`: for floats the value; for integers the
// two's complement bits (truncated to the dtype when stored).
struct Input {
  double f = 0;
  std::uint64_t bits = 0;
};
Input input_value(DataType dtype, ReduceOp op, int rank, std::size_t index) {
  // One mixing round per element (the reference regenerates every rank's
  // input, which dominates the run time at 8 oversubscribed ranks).
  const std::uint64_t seed = (static_cast<std::uint64_t>(dtype) * 16 + static_cast<std::uint64_t>(op)) << 56;
  const std::uint64_t h = mix(seed ^ (static_cast<std::uint64_t>(rank) << 40) ^ index);
  if (is_float(dtype)) return {static_cast<double>(small_value(h, op)), 0};
  const bool full_range = op == ReduceOp::min || op == ReduceOp::max ||
                          ((op == ReduceOp::sum || op == ReduceOp::prod) && (index % 2 == 1));
  if (full_range) return {0, h};
  std::int64_t v = small_value(h, op);
  if (!is_signed_int(dtype) && v < 0) v = -v;  // unsigned mean stays small and non-negative
  return {0, static_cast<std::uint64_t>(v)};
}

// Sign- or zero-extend the low `width_bits` of `bits` to a value.
std::int64_t as_signed(std::uint64_t bits, unsigned width) {
  if (width == 64) return static_cast<std::int64_t>(bits);
  const std::uint64_t sign = std::uint64_t{1} << (width - 1), mask = (sign << 1) - 1;
  bits &= mask;
  return static_cast<std::int64_t>((bits ^ sign) - sign);
}
std::uint64_t as_unsigned(std::uint64_t bits, unsigned width) {
  return width == 64 ? bits : bits & ((std::uint64_t{1} << width) - 1);
}

// Round to 11 (f16) or 8 (bf16) significant bits, ties to even, including
// the subnormal range (where the step is fixed at the smallest exponent);
// then encode. Overflow is not needed by the tests and not handled.
std::uint16_t encode_half(double x, int significand_bits, int exponent_bias, int fraction_bits) {
  if (x == 0) return std::signbit(x) ? 0x8000 : 0;
  const std::uint16_t sign = x < 0 ? 0x8000 : 0;
  x = std::fabs(x);
  int e = std::max(std::ilogb(x), 1 - exponent_bias);
  double m = std::nearbyint(std::ldexp(x, significand_bits - 1 - e));  // default rounding: ties to even
  if (m == std::ldexp(1.0, significand_bits)) m /= 2, ++e;
  const double implicit = std::ldexp(1.0, significand_bits - 1);
  if (m < implicit) return sign | static_cast<std::uint16_t>(m);  // subnormal: exponent field 0
  return sign | static_cast<std::uint16_t>((e + exponent_bias) << fraction_bits) |
         static_cast<std::uint16_t>(m - implicit);
}
double decode_half(std::uint16_t h, int exponent_bits, int fraction_bits) {
  const int bias = (1 << (exponent_bits - 1)) - 1;
  const int e = (h >> fraction_bits) & ((1 << exponent_bits) - 1);
  const int f = h & ((1 << fraction_bits) - 1);
  const double sign = (h & 0x8000) ? -1 : 1;
  if (e == (1 << exponent_bits) - 1) return f ? NAN : sign * INFINITY;
  if (e == 0) return sign * std::ldexp(f, 1 - bias - fraction_bits);
  return sign * std::ldexp(f + (1 << fraction_bits), e - bias - fraction_bits);
}

void store_bits(void* data, std::size_t i, DataType dtype, std::uint64_t bits) {
  auto* p = static_cast<unsigned char*>(data) + i * width_bytes(dtype);
  switch (width_bytes(dtype)) {
    case 1: { const auto v = static_cast<std::uint8_t>(bits); std::memcpy(p, &v, 1); break; }
    case 2: { const auto v = static_cast<std::uint16_t>(bits); std::memcpy(p, &v, 2); break; }
    case 4: { const auto v = static_cast<std::uint32_t>(bits); std::memcpy(p, &v, 4); break; }
    default: std::memcpy(p, &bits, 8); break;
  }
}
std::uint64_t load_bits(const void* data, std::size_t i, DataType dtype) {
  const auto* p = static_cast<const unsigned char*>(data) + i * width_bytes(dtype);
  switch (width_bytes(dtype)) {
    case 1: { std::uint8_t v; std::memcpy(&v, p, 1); return v; }
    case 2: { std::uint16_t v; std::memcpy(&v, p, 2); return v; }
    case 4: { std::uint32_t v; std::memcpy(&v, p, 4); return v; }
    default: { std::uint64_t v; std::memcpy(&v, p, 8); return v; }
  }
}

}  // namespace

void store_value(void* data, std::size_t i, DataType dtype, double value) {
  // Fast path for the exactly representable small integers the exact tests
  // use: the f32 bits already are the bf16 bits when the low half is zero.
  if (dtype == DataType::bf16) {
    const float f = static_cast<float>(value);
    const auto u = std::bit_cast<std::uint32_t>(f);
    if (static_cast<double>(f) == value && (u & 0xffffu) == 0) return store_bits(data, i, dtype, u >> 16);
  }
  switch (dtype) {
    case DataType::f32: store_bits(data, i, dtype, std::bit_cast<std::uint32_t>(static_cast<float>(value))); break;
    case DataType::f64: store_bits(data, i, dtype, std::bit_cast<std::uint64_t>(value)); break;
    case DataType::f16: store_bits(data, i, dtype, encode_half(value, 11, 15, 10)); break;
    case DataType::bf16: store_bits(data, i, dtype, encode_half(value, 8, 127, 7)); break;
    default: store_bits(data, i, dtype, static_cast<std::uint64_t>(static_cast<std::int64_t>(value))); break;
  }
}

double element_value(const void* data, std::size_t i, DataType dtype) {
  const std::uint64_t bits = load_bits(data, i, dtype);
  switch (dtype) {
    case DataType::f32: return std::bit_cast<float>(static_cast<std::uint32_t>(bits));
    case DataType::f64: return std::bit_cast<double>(bits);
    case DataType::f16: return decode_half(static_cast<std::uint16_t>(bits), 5, 10);
    case DataType::bf16: return decode_half(static_cast<std::uint16_t>(bits), 8, 7);
    default:
      return is_signed_int(dtype) ? static_cast<double>(as_signed(bits, width_bits(dtype)))
                                  : static_cast<double>(bits);
  }
}

void fill_input(void* data, std::size_t count, DataType dtype, ReduceOp op, int rank) {
  for (std::size_t i = 0; i < count; ++i) {
    const Input v = input_value(dtype, op, rank, i);
    if (is_float(dtype)) store_value(data, i, dtype, v.f);
    else store_bits(data, i, dtype, v.bits);
  }
}

void fill_expected(void* data, std::size_t count, DataType dtype, ReduceOp op, int nranks) {
  const unsigned width = width_bits(dtype);
  const bool sign = is_signed_int(dtype);
  for (std::size_t i = 0; i < count; ++i) {
    if (is_float(dtype)) {
      double acc = input_value(dtype, op, 0, i).f;
      for (int r = 1; r < nranks; ++r) {
        const double v = input_value(dtype, op, r, i).f;
        switch (op) {
          case ReduceOp::sum: case ReduceOp::mean: acc += v; break;
          case ReduceOp::prod: acc *= v; break;
          case ReduceOp::min: acc = std::fmin(acc, v); break;
          case ReduceOp::max: acc = std::fmax(acc, v); break;
        }
      }
      if (op == ReduceOp::mean) acc /= nranks;  // the one rounding (to f64, then once more to the dtype; see header)
      store_value(data, i, dtype, acc);
      continue;
    }
    std::uint64_t acc = input_value(dtype, op, 0, i).bits;
    for (int r = 1; r < nranks; ++r) {
      const std::uint64_t v = input_value(dtype, op, r, i).bits;
      switch (op) {
        case ReduceOp::sum: acc += v; break;  // modulo 2^64, truncated below: exact wrap-around
        case ReduceOp::prod: acc *= v; break;
        case ReduceOp::min:
          if (sign ? as_signed(v, width) < as_signed(acc, width) : as_unsigned(v, width) < as_unsigned(acc, width))
            acc = v;
          break;
        case ReduceOp::max:
          if (sign ? as_signed(v, width) > as_signed(acc, width) : as_unsigned(v, width) > as_unsigned(acc, width))
            acc = v;
          break;
        case ReduceOp::mean: acc += v; break;
      }
    }
    if (op == ReduceOp::mean) {
      // Small inputs: the 64-bit sum is the exact sum. C++ division
      // truncates toward zero, as strata promises.
      acc = sign ? static_cast<std::uint64_t>(static_cast<std::int64_t>(acc) / nranks)
                 : acc / static_cast<std::uint64_t>(nranks);
    }
    store_bits(data, i, dtype, acc);
  }
}

std::size_t first_difference(const void* a, const void* b, std::size_t count, DataType dtype) {
  const std::size_t w = width_bytes(dtype);
  if (std::memcmp(a, b, count * w) == 0) return count;
  for (std::size_t i = 0; i < count; ++i)
    if (load_bits(a, i, dtype) != load_bits(b, i, dtype)) return i;
  return count;
}

std::string element_text(const void* data, std::size_t i, DataType dtype) {
  std::ostringstream out;
  out << element_value(data, i, dtype) << " (0x" << std::hex << load_bits(data, i, dtype) << ")";
  return out.str();
}

std::string describe_difference(const void* got, const void* want, std::size_t count, DataType dtype) {
  const std::size_t i = first_difference(got, want, count, dtype);
  if (i == count) return "";
  std::size_t n = 0;
  for (std::size_t j = i; j < count; ++j) n += load_bits(got, j, dtype) != load_bits(want, j, dtype);
  std::ostringstream out;
  out << n << " of " << count << " elements differ; first at [" << i << "]: got " << element_text(got, i, dtype)
      << ", want " << element_text(want, i, dtype);
  return out.str();
}

GatherCase::GatherCase(std::size_t count, DataType dtype, int rank, int size, bool in_place) {
  const std::size_t bytes = count * dtype_size(dtype), at = static_cast<std::size_t>(rank) * bytes;
  want.resize(static_cast<std::size_t>(size) * bytes);
  for (int r = 0; r < size; ++r) fill_input(want.data() + static_cast<std::size_t>(r) * bytes, count, dtype, ReduceOp::max, r);
  mine.assign(want.begin() + static_cast<std::ptrdiff_t>(at), want.begin() + static_cast<std::ptrdiff_t>(at + bytes));
  all.assign(want.size(), std::byte{0xA5});
  source = mine.data();
  if (in_place) {
    std::copy(mine.begin(), mine.end(), all.begin() + static_cast<std::ptrdiff_t>(at));
    source = all.data() + at;
  }
}

}  // namespace strata::test
