// Inputs and expected results for the MPI correctness tests, computed
// independently of strata (no strata code is used here).
//
// Every rank can generate every rank's input (a pure function of rank,
// index, dtype and op), so each rank computes the expected result itself in
// exact arithmetic:
//  - floats hold small integers (|v| <= 15; prod uses {-1, 1, 2}), so every
//    partial sum or product with up to 16 ranks is exact even in bf16 and
//    any summation order gives the same bits;
//  - integers use the full range for sum/prod/min/max (odd indices) so sums
//    and products wrap; modular arithmetic is exact in any order, so the
//    reference wraps a 64-bit result to the dtype;
//  - mean = exact sum / number of ranks, rounded once to the dtype (floats)
//    or truncated toward zero (integers); mean inputs are small so the sum
//    never wraps.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "strata/types.hpp"

namespace strata::test {

// Rank `rank`'s input for (dtype, op): `count` elements written to `data`.
void fill_input(void* data, std::size_t count, DataType dtype, ReduceOp op, int rank);

// op over the inputs of ranks 0 .. nranks-1, as the dtype's bits.
void fill_expected(void* data, std::size_t count, DataType dtype, ReduceOp op, int nranks);

// Index of the first element whose bits differ, or count if none.
std::size_t first_difference(const void* a, const void* b, std::size_t count, DataType dtype);

// Element i for messages, e.g. "-3 (0xc240)".
std::string element_text(const void* data, std::size_t i, DataType dtype);

// One all-gather's buffers on rank `rank` of `size`: every rank's block of
// `count` elements (rank r's fill_input with ReduceOp::max) laid out as the
// whole result `want`; this rank's block `mine`; the output `all`, filled
// with 0xA5 bytes. In place, `all` already holds this rank's block where it
// belongs and `source` points there; else `source` is `mine`.
struct GatherCase {
  GatherCase(std::size_t count, DataType dtype, int rank, int size, bool in_place);
  std::vector<std::byte> want, mine, all;
  void* source = nullptr;
};

// Describes the first difference between `got` and `want` ("" if equal).
std::string describe_difference(const void* got, const void* want, std::size_t count, DataType dtype);

// An independent decode of one element to double (for tolerance checks).
double element_value(const void* data, std::size_t i, DataType dtype);
// Round a double to the dtype once (ties to even) and store it as element i.
void store_value(void* data, std::size_t i, DataType dtype, double value);

}  // namespace strata::test
