// NaN semantics, the same for every algorithm (the `mpi` algorithm
// included, whose MPI_MIN/MAX would drop a NaN): min and max with a NaN
// input give NaN; sum gives NaN. One rank holds a NaN at a position that
// differs per element class; every rank must see NaN there and the exact
// min/max elsewhere, with the same bits on every rank.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "harness.hpp"
#include "specs.hpp"
#include "strata/strata.hpp"

using namespace strata;
using namespace strata::test;

namespace {

constexpr std::size_t kCount = 4099;

template <typename T>
void check_float(Communicator& comm, DataType dtype, ReduceOp op, const std::string& spec) {
  const int rank = comm.rank(), n = comm.size();
  std::vector<T> v(kCount);
  for (std::size_t i = 0; i < kCount; ++i) v[i] = static_cast<T>((rank + i) % 7) - T(3);
  // Rank (i mod n) puts a NaN at every 97th element i: the NaN comes from a
  // different rank each time, so no reduction order can hide it.
  for (std::size_t i = 0; i < kCount; i += 97)
    if (static_cast<int>(i % static_cast<std::size_t>(n)) == rank) v[i] = std::numeric_limits<T>::quiet_NaN();
  comm.all_reduce({v.data(), kCount, dtype}, {v.data(), kCount, dtype}, op);
  SameBitsLog same;
  same.add(spec + " " + std::string(to_string(dtype)) + " " + std::string(to_string(op)), v.data(), kCount * sizeof(T));
  same.check_same_on_all_ranks(MPI_COMM_WORLD);
  for (std::size_t i = 0; i < kCount; ++i) {
    if (i % 97 == 0) {
      CHECK_MESSAGE(std::isnan(v[i]), spec << " " << to_string(dtype) << " " << to_string(op) << ": element " << i
                                            << " = " << v[i] << ", want NaN");
      continue;
    }
    T want = op == ReduceOp::min ? T(1e30) : T(-1e30);
    for (int r = 0; r < n; ++r) {
      const T x = static_cast<T>((r + i) % 7) - T(3);
      want = op == ReduceOp::min ? std::min(want, x) : std::max(want, x);
    }
    if (v[i] != want) {
      CHECK_MESSAGE(v[i] == want, spec << " element " << i);
      break;
    }
  }
}

// f16 / bf16: NaN bit patterns in 16-bit storage.
void check_half(Communicator& comm, DataType dtype, ReduceOp op, const std::string& spec) {
  const int rank = comm.rank(), n = comm.size();
  const std::uint16_t one = dtype == DataType::f16 ? 0x3c00 : 0x3f80, nan = dtype == DataType::f16 ? 0x7e00 : 0x7fc0;
  std::vector<std::uint16_t> v(kCount, one);
  for (std::size_t i = 0; i < kCount; i += 97)
    if (static_cast<int>(i % static_cast<std::size_t>(n)) == rank) v[i] = nan;
  comm.all_reduce({v.data(), kCount, dtype}, {v.data(), kCount, dtype}, op);
  const std::uint16_t exponent = dtype == DataType::f16 ? 0x7c00 : 0x7f80, mantissa = dtype == DataType::f16 ? 0x3ff : 0x7f;
  for (std::size_t i = 0; i < kCount; i += 97)
    CHECK_MESSAGE(((v[i] & exponent) == exponent && (v[i] & mantissa) != 0),
                  spec << " " << to_string(dtype) << " " << to_string(op) << ": element " << i << " not NaN");
  CHECK(v[1] == one);
}

}  // namespace

TEST_CASE("min and max let a NaN through under every algorithm, mpi included") {
  std::vector<std::string> specs = {"auto"};
  for (const std::string& name : algorithm_names()) specs.push_back(name);
  for (const std::string& spec : specs) {
    Communicator comm(MPI_COMM_WORLD, Config{.all_reduce_spec = spec});
    for (const ReduceOp op : {ReduceOp::min, ReduceOp::max}) {
      check_float<float>(comm, DataType::f32, op, spec);
      check_float<double>(comm, DataType::f64, op, spec);
      check_half(comm, DataType::f16, op, spec);
      check_half(comm, DataType::bf16, op, spec);
    }
  }
}
