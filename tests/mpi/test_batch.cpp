// batch_all_reduce: a few tensors of mixed dtypes and sizes (including an
// empty one), reduced in place; results in input order and exact;
// on_pack_done fires once per pack, in order 0, 1, 2, ..., the same number
// of times on every rank, and when the last pack is reported every tensor
// already holds its result.
#include <doctest/doctest.h>

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

struct Item {
  DataType dtype;
  std::size_t count;
};

std::vector<Item> mixed_batch() {
  const auto n = static_cast<std::size_t>(world_size());
  return {{DataType::f32, 1021}, {DataType::f16, 7},        {DataType::i32, 0},     {DataType::u8, 13},
          {DataType::f64, 100003}, {DataType::bf16, n + 1}, {DataType::f32, 3 * n + 1}, {DataType::i64, 1}};
}

void check_batch(const std::string& spec, ReduceOp op, const CommunicationOptions& options) {
  Communicator comm(MPI_COMM_WORLD, Config{.all_reduce_spec = spec});
  const int nranks = world_size(), rank = world_rank();
  const std::string label = "batch_all_reduce spec=" + spec + " op=" + std::string(to_string(op)) +
                            " bytes_per_pack=" + std::to_string(options.bytes_per_pack);
  std::vector<Buffer> buffers, expected;
  std::vector<Tensor> tensors;
  for (const Item& item : mixed_batch()) {
    buffers.emplace_back(item.count, item.dtype);
    expected.emplace_back(item.count, item.dtype);
    fill_input(buffers.back().data(), item.count, item.dtype, op, rank);
    fill_expected(expected.back().data(), item.count, item.dtype, op, nranks);
  }
  for (Buffer& b : buffers) tensors.push_back(b.tensor());

  auto tensors_done = [&] {
    std::size_t done = 0;
    for (std::size_t i = 0; i < buffers.size(); ++i)
      done += first_difference(buffers[i].data(), expected[i].data(), buffers[i].count, buffers[i].dtype) ==
              buffers[i].count;
    return done;
  };
  std::vector<std::size_t> packs, done_at_pack;
  try {
    comm.batch_all_reduce(tensors, op, options, [&](std::size_t pack) {
      packs.push_back(pack);
      done_at_pack.push_back(tensors_done());
    });
  } catch (const Error& e) {
    FAIL_CHECK(label << ": threw " << e.what());
  }
  for (std::size_t i = 0; i < buffers.size(); ++i) {
    const std::string diff = describe_difference(buffers[i].data(), expected[i].data(), buffers[i].count, buffers[i].dtype);
    CHECK_MESSAGE(diff.empty(), label << " tensors[" << i << "] (" << to_string(buffers[i].dtype) << " x "
                                      << buffers[i].count << "): " << diff);
  }
  CHECK_MESSAGE(!packs.empty(), label << ": on_pack_done never fired");
  for (std::size_t i = 0; i < packs.size(); ++i)
    CHECK_MESSAGE(packs[i] == i, label << ": on_pack_done call " << i << " reported pack " << packs[i]);
  for (std::size_t i = 1; i < done_at_pack.size(); ++i)
    CHECK_MESSAGE(done_at_pack[i] >= done_at_pack[i - 1], label << ": results went backwards between packs");
  if (!done_at_pack.empty())
    CHECK_MESSAGE(done_at_pack.back() == buffers.size(),
                  label << ": when the last pack was reported only " << done_at_pack.back() << " of "
                        << buffers.size() << " tensors held their results");
  // Every rank must see the same number of packs (a plan is a pure function
  // of the arguments, which all ranks share).
  unsigned long long mine = packs.size(), lo = 0, hi = 0;
  MPI_Allreduce(&mine, &lo, 1, MPI_UNSIGNED_LONG_LONG, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&mine, &hi, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
  CHECK_MESSAGE(lo == hi, label << ": ranks saw between " << lo << " and " << hi << " packs");
  SameBitsLog log;
  for (std::size_t i = 0; i < buffers.size(); ++i)
    log.add(label + " tensors[" + std::to_string(i) + "]", buffers[i].data(), buffers[i].size_bytes());
  log.check_same_on_all_ranks(MPI_COMM_WORLD);
}

}  // namespace

TEST_CASE("batch_all_reduce: mixed dtypes, every spec x op, automatic packing") {
  for (const std::string& spec : all_reduce_specs())
    for (ReduceOp op : kAllOps) check_batch(spec, op, {});
}

TEST_CASE("batch_all_reduce: explicit bytes_per_pack and a timeout") {
  // Packing happens before any algorithm runs, so two specs suffice: auto
  // and the last registered one.
  std::vector<std::string> specs = all_reduce_specs();
  if (specs.size() > 2) specs = {specs.front(), specs.back()};
  for (const std::string& spec : specs)
    for (long long bytes_per_pack : {1LL, 4096LL, 1LL << 20}) {
      check_batch(spec, ReduceOp::sum, {.bytes_per_pack = bytes_per_pack});
      check_batch(spec, ReduceOp::mean, {.bytes_per_pack = bytes_per_pack, .timeout_seconds = 600});
    }
}

TEST_CASE("batch_all_reduce: an empty batch and a batch of empty tensors are collective no-ops") {
  Communicator comm(MPI_COMM_WORLD);
  std::size_t calls = 0;
  std::vector<Tensor> none;
  CHECK_NOTHROW(comm.batch_all_reduce(none, ReduceOp::sum, {}, [&](std::size_t) { ++calls; }));
  std::vector<Tensor> empties = {{nullptr, 0, DataType::f32}, {nullptr, 0, DataType::i8}};
  CHECK_NOTHROW(comm.batch_all_reduce(empties, ReduceOp::max));
  CHECK(calls == 0);
  double x = 2.0;
  comm.all_reduce({&x, 1, DataType::f64}, {&x, 1, DataType::f64}, ReduceOp::sum);  // still in step
  CHECK(x == 2.0 * world_size());
}
