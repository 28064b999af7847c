// reduce_scatter and all_gather: every forced spec (two-level specs run
// flat for these), every op and dtype, block counts from 0 to ~100k, in
// place and out of place, checked against the exact reference
// (reduce_scatter: rank r's block of the all-reduce of the whole inputs;
// all_gather: every rank's input at its block, the same bits everywhere);
// the caller's other memory untouched; and misuse: a wrong count, an
// overlapping buffer, ranks disagreeing on the call or its count.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "buffers.hpp"
#include "check_throws.hpp"
#include "harness.hpp"
#include "reference.hpp"
#include "specs.hpp"
#include "strata/strata.hpp"

using namespace strata;
using namespace strata::test;

namespace {

std::vector<std::string> blockwise_specs() {
  std::vector<std::string> specs = all_reduce_specs();
  for (const char* two_levels : {"pscpu/xring", "xring/tree"})
    if (registered("pscpu") && registered("xring") && registered("tree")) specs.emplace_back(two_levels);
  return only_requested(specs);
}

std::string label_of(const char* what, const std::string& spec, ReduceOp op, DataType dtype, std::size_t block,
                     bool in_place) {
  return std::string(what) + " spec=" + spec + " op=" + std::string(to_string(op)) + " dtype=" +
         std::string(to_string(dtype)) + " block=" + std::to_string(block) + (in_place ? " in-place" : " out-of-place");
}

std::byte* block_at(Buffer& b, std::size_t block, int index) {
  return static_cast<std::byte*>(b.data()) + static_cast<std::size_t>(index) * block * dtype_size(b.dtype);
}

// One reduce_scatter of `block` elements per rank, checked on this rank:
// its block of the exact reduction; `in` untouched but (in place) its own
// block.
void check_reduce_scatter(Communicator& comm, const std::string& spec, ReduceOp op, DataType dtype, std::size_t block,
                          bool in_place) {
  const int n = comm.size(), rank = comm.rank();
  const std::size_t whole = block * static_cast<std::size_t>(n), element = dtype_size(dtype);
  const std::string label = label_of("reduce_scatter", spec, op, dtype, block, in_place);
  Buffer input(whole, dtype), expected(whole, dtype), in(whole, dtype), out(block, dtype);
  fill_input(input.data(), whole, dtype, op, rank);
  fill_expected(expected.data(), whole, dtype, op, n);
  in.copy_from(input);
  Tensor out_tensor = in_place ? Tensor{block_at(in, block, rank), block, dtype} : out.tensor();
  try {
    comm.reduce_scatter(in.tensor(), out_tensor, op);
  } catch (const Error& e) {
    FAIL_CHECK(label << ": threw " << e.what());
    return;
  }
  const std::string diff = describe_difference(out_tensor.data, block_at(expected, block, rank), block, dtype);
  CHECK_MESSAGE(diff.empty(), label << ": " << diff);
  for (int r = 0; r < n; ++r) {
    if (in_place && r == rank) continue;
    CHECK_MESSAGE(std::memcmp(block_at(in, block, r), block_at(input, block, r), block * element) == 0,
                  label << ": block " << r << " of the input was modified");
  }
}

// One all_gather of `block` elements per rank: every rank's input at its
// block, the same bits on every rank; the input untouched.
void check_all_gather(Communicator& comm, const std::string& spec, DataType dtype, std::size_t block, bool in_place,
                      SameBitsLog& log) {
  const int n = comm.size(), rank = comm.rank();
  const std::size_t whole = block * static_cast<std::size_t>(n), element = dtype_size(dtype);
  const std::string label = label_of("all_gather", spec, ReduceOp::sum, dtype, block, in_place);
  Buffer mine(block, dtype), in(block, dtype), out(whole, dtype), expected(whole, dtype);
  // Each rank's data differs, so a block from the wrong rank cannot pass.
  fill_input(mine.data(), block, dtype, ReduceOp::max, rank);
  for (int r = 0; r < n; ++r) fill_input(block_at(expected, block, r), block, dtype, ReduceOp::max, r);
  in.copy_from(mine);
  Tensor in_tensor = in.tensor();
  if (in_place) {
    std::memcpy(block_at(out, block, rank), mine.data(), block * element);
    in_tensor.data = block_at(out, block, rank);
  }
  try {
    comm.all_gather(in_tensor, out.tensor());
  } catch (const Error& e) {
    FAIL_CHECK(label << ": threw " << e.what());
    return;
  }
  const std::string diff = describe_difference(out.data(), expected.data(), whole, dtype);
  CHECK_MESSAGE(diff.empty(), label << ": " << diff);
  if (!in_place)
    CHECK_MESSAGE(std::memcmp(in.data(), mine.data(), block * element) == 0, label << ": the input was modified");
  log.add(label, out.data(), whole * element);
}

}  // namespace

TEST_CASE("reduce_scatter: every spec x op x dtype, blocks of 0, 1 and an odd count") {
  for (const std::string& spec : blockwise_specs()) {
    Communicator comm(MPI_COMM_WORLD, Config{.all_reduce_spec = spec});
    std::size_t k = 0;
    for (ReduceOp op : kAllOps)
      for (DataType dtype : kAllDtypes)
        for (std::size_t block : {std::size_t(0), std::size_t(1), std::size_t(37)})
          check_reduce_scatter(comm, spec, op, dtype, block, ++k % 2 == 0);
  }
}

TEST_CASE("reduce_scatter: larger blocks (several shared-memory rounds, ring chunks), both forms") {
  for (const std::string& spec : blockwise_specs()) {
    Communicator comm(MPI_COMM_WORLD, Config{.all_reduce_spec = spec});
    for (bool in_place : {false, true}) {
      check_reduce_scatter(comm, spec, ReduceOp::sum, DataType::f32, 40009, in_place);
      check_reduce_scatter(comm, spec, ReduceOp::mean, DataType::bf16, 3001, in_place);
      check_reduce_scatter(comm, spec, ReduceOp::max, DataType::u8, 70001, in_place);
    }
  }
}

TEST_CASE("all_gather: every spec x dtype x block, both forms; every rank the same bits") {
  SameBitsLog log;
  for (const std::string& spec : blockwise_specs()) {
    Communicator comm(MPI_COMM_WORLD, Config{.all_reduce_spec = spec});
    std::size_t k = 0;
    for (DataType dtype : kAllDtypes)
      for (std::size_t block : {std::size_t(0), std::size_t(1), std::size_t(37)})
        check_all_gather(comm, spec, dtype, block, ++k % 2 == 0, log);
    for (bool in_place : {false, true}) {
      check_all_gather(comm, spec, DataType::f32, 40009, in_place, log);
      check_all_gather(comm, spec, DataType::u8, 70001, in_place, log);
    }
    log.check_same_on_all_ranks(MPI_COMM_WORLD);
  }
}

TEST_CASE("reduce_scatter keeps a NaN: f32 max and sum with a NaN on one rank") {
  const int n = world_size(), rank = world_rank();
  const std::size_t block = 5, whole = block * static_cast<std::size_t>(n);
  for (const std::string& spec : blockwise_specs()) {
    Communicator comm(MPI_COMM_WORLD, Config{.all_reduce_spec = spec});
    for (ReduceOp op : {ReduceOp::max, ReduceOp::sum}) {
      std::vector<float> in(whole, 1.0f), out(block, 0.0f);
      // The last rank holds a NaN at element 2 of every block.
      if (rank == n - 1)
        for (int r = 0; r < n; ++r) in[static_cast<std::size_t>(r) * block + 2] = std::numeric_limits<float>::quiet_NaN();
      comm.reduce_scatter({in.data(), whole, DataType::f32}, {out.data(), block, DataType::f32}, op);
      CHECK_MESSAGE(std::isnan(out[2]), "spec=" << spec << " op=" << to_string(op) << ": NaN lost");
      CHECK_MESSAGE(out[0] == (op == ReduceOp::max ? 1.0f : float(n)), "spec=" << spec);
    }
  }
}

TEST_CASE("misuse: wrong counts and overlapping buffers raise InvalidArgument; disagreeing ranks raise Mismatch") {
  const int n = world_size(), rank = world_rank();
  Communicator comm(MPI_COMM_WORLD);
  std::vector<float> whole(4 * static_cast<std::size_t>(n) + 1, 1.0f), block(4, 0.0f);
  const Tensor w{whole.data(), 4 * static_cast<std::size_t>(n), DataType::f32};
  const Tensor b{block.data(), 4, DataType::f32};
  // Every rank alike: each raises its own InvalidArgument.
  CHECK_THROWS_AS(comm.reduce_scatter({whole.data(), w.count + 1, DataType::f32}, b, ReduceOp::sum), InvalidArgument);
  CHECK_THROWS_AS(comm.all_gather(b, {whole.data(), w.count + 1, DataType::f32}), InvalidArgument);
  CHECK_THROWS_AS(comm.all_gather(b, {whole.data(), w.count, DataType::f64}), InvalidArgument);
  if (n > 1) {
    // Overlapping, but not this rank's block.
    const Tensor wrong_block{whole.data() + (rank + 1) % n * 4 + 1, 4, DataType::f32};
    CHECK_THROWS_AS(comm.reduce_scatter(w, wrong_block, ReduceOp::sum), InvalidArgument);
    CHECK_THROWS_AS(comm.all_gather(wrong_block, w), InvalidArgument);
    // One rank's block count differs: InvalidArgument there (its input is
    // not size x block), Mismatch on the others; the communicator stays usable.
    const bool odd_one = rank == n - 1;
    const Tensor short_block{block.data(), odd_one ? 3 : 4, DataType::f32};
    if (odd_one) CHECK_THROWS_AS(comm.reduce_scatter(w, short_block, ReduceOp::sum), InvalidArgument);
    else CHECK_THROWS_AS(comm.reduce_scatter(w, short_block, ReduceOp::sum), Mismatch);
    // Valid arguments, different calls: Mismatch on every rank.
    if (odd_one) CHECK_THROWS_AS(comm.all_reduce(b, b, ReduceOp::sum), Mismatch);
    else CHECK_THROWS_AS(comm.reduce_scatter(w, b, ReduceOp::sum), Mismatch);
    if (odd_one) CHECK_THROWS_AS(comm.all_gather(b, w), Mismatch);
    else CHECK_THROWS_AS(comm.reduce_scatter(w, b, ReduceOp::sum), Mismatch);
    // A refused all_gather writes nothing, not even this rank's own block
    // (the check rides in the first shared-memory round on one node): one
    // rank's blocks are shorter, every rank's arguments are valid alone.
    for (const bool in_place : {false, true}) {
      const std::size_t mine = odd_one ? 3 : 4, total = mine * static_cast<std::size_t>(n);
      std::vector<float> own(mine, 5.0f), gathered(total, -7.0f);
      float* source = in_place ? gathered.data() + static_cast<std::size_t>(rank) * mine : own.data();
      const std::vector<float> before(gathered);
      CHECK_THROWS_AS(comm.all_gather({source, mine, DataType::f32}, {gathered.data(), total, DataType::f32}),
                      Mismatch);
      CHECK_MESSAGE(gathered == before, "in_place=" << in_place << ": a refused all_gather wrote its output");
    }
  }
  comm.reduce_scatter(w, b, ReduceOp::sum);
  for (float v : block) CHECK(v == float(n));
  CHECK_FALSE(comm.broken());
}
