// reduce and broadcast: every forced spec (algorithms that decline a rooted
// collective fall back to tree, which must be just as correct), and a few
// two-level specs (hierarchical on virtual nodes, the first level flat on
// one node) x every root, checked against the exact reference. reduce: the root gets the
// result, non-roots' `out` is ignored (null or left untouched); broadcast:
// every rank ends with the root's bits.
#include <doctest/doctest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "buffers.hpp"
#include "exact.hpp"
#include "harness.hpp"
#include "reference.hpp"
#include "specs.hpp"
#include "strata/strata.hpp"

using namespace strata;
using namespace strata::test;

namespace {

std::string label_of(const char* what, const std::string& spec, int root, ReduceOp op, DataType dtype,
                     std::size_t count, bool in_place) {
  return std::string(what) + " spec=" + spec + " root=" + std::to_string(root) + " op=" + std::string(to_string(op)) +
         " dtype=" + std::string(to_string(dtype)) + " count=" + std::to_string(count) +
         (in_place ? " in-place" : " out-of-place");
}

// One reduce, checked on every rank. Out of place, non-roots pass a null
// `out` for even roots and a garbage-filled buffer (which must stay as it
// was) for odd roots, so both documented forms are exercised.
void check_reduce(Communicator& comm, const std::string& spec, int root, ReduceOp op, const Buffer& input,
                  const Buffer& expected, bool in_place) {
  check_exact_reduce(comm, label_of("reduce", spec, root, op, input.dtype, input.count, in_place), input, expected,
                     op, root, in_place, root % 2 == 0);
}

std::vector<std::string> rooted_specs() {
  std::vector<std::string> specs = all_reduce_specs();
  for (const char* two_levels : {"pscpu/xring", "xring/tree", "tree/pscpu#2"})
    if (registered("pscpu") && registered("xring") && registered("tree")) specs.emplace_back(two_levels);
  return only_requested(specs);
}

struct Case {
  std::vector<int> roots;
  std::vector<ReduceOp> ops;
  std::vector<DataType> dtypes;
  std::vector<std::size_t> sizes;
};

// Each (op, dtype, size, root) runs once, in place or out of place
// alternately, so both forms meet every op, dtype and root without doubling
// the run time at 8 oversubscribed ranks.
void reduce_matrix(const Case& c) {
  const int nranks = world_size(), rank = world_rank();
  for (const std::string& spec : rooted_specs()) {
    Communicator comm(MPI_COMM_WORLD, Config{.all_reduce_spec = spec});
    std::size_t k = 0;
    for (ReduceOp op : c.ops)
      for (DataType dtype : c.dtypes)
        for (std::size_t count : c.sizes) {
          Buffer input(count, dtype), expected(count, dtype);
          fill_input(input.data(), count, dtype, op, rank);
          fill_expected(expected.data(), count, dtype, op, nranks);
          for (int root : c.roots) check_reduce(comm, spec, root, op, input, expected, ++k % 2 == 0);
        }
  }
}

std::vector<int> every_root() {
  std::vector<int> roots;
  for (int r = 0; r < world_size(); ++r) roots.push_back(r);
  return roots;
}

// First, middle and last rank: enough to catch root-relative renumbering
// bugs on the expensive sizes.
std::vector<int> some_roots() {
  std::vector<int> roots = {0, world_size() / 2, world_size() - 1};
  std::sort(roots.begin(), roots.end());
  roots.erase(std::unique(roots.begin(), roots.end()), roots.end());
  return roots;
}

}  // namespace

TEST_CASE("reduce: every spec x root x op x dtype, small non-divisible count") {
  const auto n = static_cast<std::size_t>(world_size());
  reduce_matrix({every_root(),
                 {std::begin(kAllOps), std::end(kAllOps)},
                 {std::begin(kAllDtypes), std::end(kAllDtypes)},
                 {3 * n + 1}});
}

TEST_CASE("reduce: larger and empty counts, first/middle/last root") {
  reduce_matrix({some_roots(),
                 {std::begin(kAllOps), std::end(kAllOps)},
                 {DataType::f32, DataType::bf16, DataType::i32, DataType::u8},
                 {0, 1, 1021}});
  reduce_matrix({some_roots(), {ReduceOp::sum, ReduceOp::max}, {DataType::f32, DataType::u8}, {100003}});
}

TEST_CASE("broadcast: every spec x root x dtype x size; all ranks end with the root's bits") {
  const auto n = static_cast<std::size_t>(world_size());
  SameBitsLog log;
  for (const std::string& spec : rooted_specs()) {
    Communicator comm(MPI_COMM_WORLD, Config{.all_reduce_spec = spec});
    for (DataType dtype : kAllDtypes) {
      // Broadcast only moves bytes: every dtype at one awkward size, a few
      // dtypes at the others.
      std::vector<std::size_t> sizes = {3 * n + 1};
      if (dtype == DataType::u8 || dtype == DataType::f64) sizes.insert(sizes.end(), {0, 1, 7, n + 1, 1021});
      if (dtype == DataType::f32) sizes.push_back(100003);
      for (std::size_t count : sizes)
        for (int root : every_root()) {
          if (count == 100003 && root != 0 && root != world_size() - 1) continue;
          const std::string label = label_of("broadcast", spec, root, ReduceOp::sum, dtype, count, true);
          // The root's data differs per root, so a broadcast from the wrong
          // rank cannot pass.
          Buffer want(count, dtype);
          fill_input(want.data(), count, dtype, ReduceOp::max, root);
          check_exact_broadcast(comm, label, want, root, {}, log);
        }
    }
    log.check_same_on_all_ranks(MPI_COMM_WORLD);
  }
}

TEST_CASE("reduce and broadcast with a timeout take the polling paths and stay exact") {
  const int nranks = world_size(), rank = world_rank();
  const std::size_t count = 1021;
  for (const std::string& spec : rooted_specs()) {
    Communicator comm(MPI_COMM_WORLD, Config{.all_reduce_spec = spec});
    for (int root : some_roots()) {
      Buffer input(count, DataType::f32), expected(count, DataType::f32), out(count, DataType::f32);
      fill_input(input.data(), count, DataType::f32, ReduceOp::sum, rank);
      fill_expected(expected.data(), count, DataType::f32, ReduceOp::sum, nranks);
      const std::string label = label_of("reduce", spec, root, ReduceOp::sum, DataType::f32, count, false) + " timeout=600";
      comm.reduce(input.tensor(), out.tensor(), ReduceOp::sum, root, {.timeout_seconds = 600});
      if (rank == root) CHECK_MESSAGE(first_difference(out.data(), expected.data(), count, DataType::f32) == count, label);
      Buffer buffer(count, DataType::f32);
      if (rank == root) buffer.copy_from(expected);
      comm.broadcast(buffer.tensor(), root, {.timeout_seconds = 600});
      CHECK_MESSAGE(first_difference(buffer.data(), expected.data(), count, DataType::f32) == count,
                    "broadcast spec=" << spec << " root=" << root << " timeout=600");
    }
  }
}
