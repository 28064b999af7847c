// Test data whose reduction the bench knows exactly, and the check against it.
//
// Every value is a small integer (or, for prod, +-1 and +-2) chosen so that
// the sum of all ranks' contributions is exactly representable in the dtype
// -- for f16 and bf16 too -- whatever order an algorithm adds them in. So the
// reference is exact and computed here, independently of strata and of MPI;
// the only tolerance is one rounding for mean on floating types. Values
// differ between ranks and along the buffer (not all ones), so a dropped,
// doubled, shifted or unwritten contribution shows up as #wrong.
#pragma once

#include <cstddef>
#include <vector>

#include "strata/types.hpp"

namespace bench {

class Pattern {
 public:
  // `broadcast_root` >= 0: the expected result is that root's data, not a
  // reduction.
  Pattern(strata::DataType dtype, strata::ReduceOp op, int nranks, int broadcast_root = -1);

  // Writes rank `rank`'s contribution. `offset` shifts the pattern so that
  // the tensors of a batch hold different data.
  void fill(int rank, void* data, std::size_t count, std::size_t offset = 0) const;

  // Elements of `data` that differ from the expected result.
  std::size_t count_wrong(const void* data, std::size_t count, std::size_t offset = 0) const;

 private:
  double contribution(int rank, std::size_t j) const;

  strata::DataType dtype_;
  strata::ReduceOp op_;
  int nranks_;
  long long bound_ = 0;  // values lie in [-bound, bound] ([0, bound] unsigned)
  bool sparse_ = false;  // too many ranks for dense values: one rank contributes per element
  double tolerance_ = 0;                  // relative; non-zero only for mean on floating types
  std::vector<double> expected_;          // one period of the expected result
};

// A recognisable fill for output buffers, so that an element an algorithm
// forgot to write is (almost always) counted wrong.
void fill_poison(void* data, std::size_t count, strata::DataType dtype);

// Test-only (STRATA_BENCH_CORRUPT=1): flips a high bit of one element, so CI
// can prove that wrong results are caught and reported.
void corrupt_one(void* data, std::size_t count, strata::DataType dtype);

}  // namespace bench
