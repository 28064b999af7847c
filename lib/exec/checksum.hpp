// The checksums the integrity check (exec/integrity.hpp) compares across
// ranks: of one buffer's bytes, an exact hash; of its elements, the sums a
// reduction must preserve; and, for min and max, the element-wise order
// between a rank's own input and the result. Each is one pass over the
// data; the hash and the sums run in the copy for the instruction set the
// reduction kernels use (host::simd::chosen()), and every copy gives the
// same bits. Internal header.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "strata/types.hpp"

namespace strata::exec {

// A 64-bit hash of `bytes` bytes: four lanes of 64-bit words, each keeping
// a wrapping sum and a wrapping sum of its prefix sums (Fletcher's
// checksum, 64 bits wide), mixed at the end. A single flipped bit always
// changes it (the difference is ±2^k times an odd number, never 0 modulo
// 2^64), and so does moving a word to another position unless it equals
// the word there; other differences change it but with probability 2^-64.
std::uint64_t hash_bytes(const void* data, std::size_t bytes);

// The sums of `count` elements of `dtype` that a sum preserves.
struct ElementSums {
  // Integer dtypes: the wrapping sum of the elements (signed ones sign-extended).
  std::uint64_t wrapping = 0;
  // Floating dtypes, in double: the sum of the elements and of their
  // magnitudes (magnitude is inf or NaN when an element is; for f64 also
  // when the magnitudes' sum overflows). Accumulated in 16 lanes over blocks
  // of 4096 elements: its own rounding error is below
  // sum_error_bound(count) * magnitude.
  double sum = 0;
  double magnitude = 0;
};
ElementSums element_sums(const void* data, std::size_t count, DataType dtype);

// hash_bytes and element_sums as one instruction set's copy computes them
// ("baseline", "avx2", "avx512"; one this build or CPU lacks falls back to
// the baseline), for the tests that check every copy gives the same bits.
std::uint64_t hash_bytes_with(std::string_view isa, const void* data, std::size_t bytes);
ElementSums element_sums_with(std::string_view isa, const void* data, std::size_t count, DataType dtype);

// How far, relative to `magnitude`, element_sums's double `sum` of `count`
// elements may be from the exact sum.
double sum_error_bound(std::size_t count);

// Min and max: `result` against this rank's own input, element by element.
struct OrderCheck {
  std::uint64_t violations = 0;  // elements on the wrong side of own (max: result < own), or own NaN but result not
  std::uint64_t equal = 0;       // elements equal to own (both NaN counts as equal)
};
// Precondition: op is min or max.
OrderCheck check_order(const void* own, const void* result, std::size_t count, DataType dtype, ReduceOp op);

}  // namespace strata::exec
