// Non-exact floats: random inputs whose sums round differently in
// different orders. Results must be within a rounding-error bound of the
// exact sum, identical on every rank, and identical from run to run (the
// same call twice gives the same bits). min/max involve no rounding, so
// they must match exactly even here.
#include <doctest/doctest.h>

#include <cmath>
#include <memory>
#include <utility>
#include <random>
#include <string>
#include <vector>

#include "buffers.hpp"
#include "harness.hpp"
#include "reference.hpp"
#include "specs.hpp"
#include "strata/strata.hpp"

using namespace strata;
using namespace strata::test;

namespace {

constexpr DataType kFloatDtypes[] = {DataType::f32, DataType::f64, DataType::f16, DataType::bf16};

// Unit roundoff of each dtype (half an ulp at 1).
double unit_roundoff(DataType dtype) {
  switch (dtype) {
    case DataType::f64: return 0x1p-53;
    case DataType::f32: return 0x1p-24;
    case DataType::f16: return 0x1p-11;
    default: return 0x1p-8;
  }
}

// Rank r's random input, stored in the dtype (so every rank can rebuild
// every other rank's exact stored values).
Buffer random_input(std::size_t count, DataType dtype, int rank, ReduceOp op) {
  Buffer b(count, dtype);
  std::mt19937_64 rng(1000003ull * static_cast<unsigned>(rank + 1) + static_cast<unsigned>(dtype));
  std::normal_distribution<double> normal(0.0, 1.0);
  for (std::size_t i = 0; i < count; ++i) {
    const double x = normal(rng);
    store_value(b.data(), i, dtype, op == ReduceOp::prod ? 1.0 + x / 64 : x);
  }
  return b;
}

// `inputs` holds every rank's input (each rank generates all of them).
void check_random(Communicator& comm, const std::string& spec, DataType dtype, ReduceOp op, std::size_t count,
                  std::vector<Buffer>& inputs, SameBitsLog& log) {
  const int nranks = world_size();
  const std::string label = "random spec=" + spec + " op=" + std::string(to_string(op)) +
                            " dtype=" + std::string(to_string(dtype)) + " count=" + std::to_string(count);
  Buffer& mine = inputs[static_cast<std::size_t>(comm.rank())];
  Buffer first(count, dtype), second(count, dtype);
  comm.all_reduce(mine.tensor(), first.tensor(), op);
  comm.all_reduce(mine.tensor(), second.tensor(), op);
  CHECK_MESSAGE(first_difference(first.data(), second.data(), count, dtype) == count,
                label << ": the same call twice gave different bits");
  log.add(label, first.data(), first.size_bytes());

  // Each of the n-1 reduction steps may round (plus one rounding for mean's
  // division), each by at most u times the running magnitude.
  const double u = unit_roundoff(dtype);
  std::size_t bad = 0, first_bad = count;
  double got_at = 0, want_at = 0;
  for (std::size_t i = 0; i < count; ++i) {
    double exact = 0, magnitude = 0;
    if (op == ReduceOp::prod) exact = 1;
    if (op == ReduceOp::min) exact = INFINITY;
    if (op == ReduceOp::max) exact = -INFINITY;
    for (const Buffer& in : inputs) {
      const double v = element_value(in.data(), i, dtype);
      magnitude += std::fabs(v);
      switch (op) {
        case ReduceOp::sum: case ReduceOp::mean: exact += v; break;
        case ReduceOp::prod: exact *= v; break;
        case ReduceOp::min: exact = std::fmin(exact, v); break;
        case ReduceOp::max: exact = std::fmax(exact, v); break;
      }
    }
    double tolerance = 0;
    if (op == ReduceOp::sum) tolerance = 2 * nranks * u * magnitude;
    if (op == ReduceOp::mean) exact /= nranks, tolerance = 2 * (nranks + 1) * u * magnitude / nranks;
    if (op == ReduceOp::prod) tolerance = 2 * (nranks + 1) * u * std::fabs(exact);
    const double got = element_value(first.data(), i, dtype);
    if (!(std::fabs(got - exact) <= tolerance)) {
      if (bad++ == 0) first_bad = i, got_at = got, want_at = exact;
    }
  }
  CHECK_MESSAGE(bad == 0, label << ": " << bad << " elements outside the rounding bound; first [" << first_bad
                                << "] got " << got_at << ", exact " << want_at);
}

}  // namespace

TEST_CASE("random floats: within rounding bounds, deterministic, same bits on every rank") {
  SameBitsLog log;
  std::vector<std::pair<std::string, std::unique_ptr<Communicator>>> comms;
  for (const std::string& spec : all_reduce_specs())
    comms.emplace_back(spec, std::make_unique<Communicator>(MPI_COMM_WORLD, Config{.all_reduce_spec = spec}));
  const auto n = static_cast<std::size_t>(world_size());
  for (DataType dtype : kFloatDtypes) {
    for (ReduceOp op : kAllOps)
      for (std::size_t count : {std::size_t{1021}, 3 * n + 1, std::size_t{16411}}) {
        std::vector<Buffer> inputs;
        for (std::size_t r = 0; r < n; ++r) inputs.push_back(random_input(count, dtype, static_cast<int>(r), op));
        for (auto& [spec, comm] : comms) check_random(*comm, spec, dtype, op, count, inputs, log);
      }
    log.check_same_on_all_ranks(MPI_COMM_WORLD);
  }
}
