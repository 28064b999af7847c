// Makes a known set of calls with STRATA_TRACE on, for check_trace.py: an
// 8 B and a 1 MiB all-reduce (hierarchical across virtual nodes under
// STRATA_RANKS_PER_NODE), a reduce, a broadcast, a batch of several packs
// with on_pack_done, and, on a second communicator, an all-reduce that
// times out (the last rank never enters it) followed by a call the broken
// communicator refuses. Each rank writes the calls it made, in order, with
// the outcome it saw, to <trace file>.expected (one "name outcome" a line),
// and copies its trace file right after the timeout to <trace
// file>.after-failure: the file must already be complete and valid then.
// STRATA_TRACE must contain %r (this program names the files with it).
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "harness_core.hpp"
#include "strata/strata.hpp"

using namespace strata;

namespace {

std::string trace_file(int rank) {
  std::string path = std::getenv("STRATA_TRACE");
  const std::size_t at = path.find("%r");
  if (at == std::string::npos) {
    std::fprintf(stderr, "trace_calls: STRATA_TRACE must contain %%r\n");
    std::exit(2);
  }
  return path.replace(at, 2, std::to_string(rank));
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  test::RankChecks checks("trace_calls", 90);
  const int rank = test::world_rank(), size = test::world_size();
  const std::string file = trace_file(rank);
  std::vector<std::string> made;  // "name outcome"

  {
    Communicator comm(MPI_COMM_WORLD);
    std::vector<float> small(2, 1.0f), large(256 * 1024, 1.0f);
    comm.all_reduce({small.data(), small.size(), DataType::f32}, {small.data(), small.size(), DataType::f32}, ReduceOp::sum);
    made.push_back("all_reduce ok");
    comm.all_reduce({large.data(), large.size(), DataType::f32}, {large.data(), large.size(), DataType::f32}, ReduceOp::sum);
    made.push_back("all_reduce ok");
    checks.check(large[0] == float(size), "wrong all_reduce result");
    comm.reduce({large.data(), 1000, DataType::f32}, {large.data(), 1000, DataType::f32}, ReduceOp::max, 1 % size);
    made.push_back("reduce ok");
    comm.broadcast({large.data(), large.size(), DataType::f32}, 0);
    made.push_back("broadcast ok");

    std::vector<std::vector<float>> grads = {std::vector<float>(3000, 1.0f), std::vector<float>(100, 1.0f),
                                             std::vector<float>(5000, 1.0f)};
    std::vector<Tensor> tensors;
    for (auto& g : grads) tensors.push_back({g.data(), g.size(), DataType::f32});
    std::size_t packs_done = 0;
    comm.batch_all_reduce(tensors, ReduceOp::sum, {.bytes_per_pack = 8192},
                          [&](std::size_t) { ++packs_done; });
    made.push_back("batch_all_reduce ok");
    checks.check(packs_done >= 2, "expected several packs");
    checks.check(grads[2][4999] == float(size), "wrong batch result");
  }

  if (size > 1) {
    Communicator comm(MPI_COMM_WORLD);
    const int absent = size - 1;
    std::vector<float> data(1000, 1.0f);
    if (rank != absent) {
      try {
        comm.all_reduce({data.data(), data.size(), DataType::f32}, {data.data(), data.size(), DataType::f32},
                        ReduceOp::sum, {.timeout_seconds = 0.3});
        checks.check(false, "the call with an absent rank returned");
        made.push_back("all_reduce ok");
      } catch (const DeadlineExceeded&) {
        made.push_back("all_reduce DeadlineExceeded");
      }
      // The trace is written at the failure, before anything ends.
      std::error_code error;
      std::filesystem::copy_file(file, file + ".after-failure", std::filesystem::copy_options::overwrite_existing,
                                 error);
      checks.check(!error, "no trace file right after the timeout");
      try {
        comm.all_reduce({data.data(), data.size(), DataType::f32}, {data.data(), data.size(), DataType::f32}, ReduceOp::sum);
        made.push_back("all_reduce ok");
      } catch (const PeerFailure&) {
        made.push_back("all_reduce PeerFailure");
      }
    }
    MPI_Barrier(MPI_COMM_WORLD);
  }

  std::ofstream(file + ".expected") << [&] {
    std::string lines;
    for (const std::string& m : made) lines += m + "\n";
    return lines;
  }();
  const int status = checks.finish();
  MPI_Finalize();
  return status;
}
