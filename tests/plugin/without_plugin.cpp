// A program of the public API run where the GPU plugin cannot be loaded
// (check_plugin.sh hides it, or the CUDA runtime it needs): host
// collectives must work as ever, and a CUDA tensor must raise
// strata::Unavailable whose message names the reason, which contains
// argv[1]. Checks and watchdog: the MPI harness core's (it ends with
// "strata-test SUCCESS|FAILURE: without_plugin: ...").
#include <mpi.h>
#include <strata/strata.hpp>

#include <cstdio>
#include <string>
#include <vector>

#include "harness_core.hpp"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const std::string reason = argc > 1 ? argv[1] : "";
  int status = 1;
  {
    strata::test::RankChecks checks("without_plugin", 60);
    strata::Communicator comm(MPI_COMM_WORLD);
    const int rank = comm.rank();
    const int n = comm.size();
    std::vector<float> data(1000, static_cast<float>(rank + 1));
    comm.all_reduce({data.data(), data.size(), strata::DataType::f32}, {data.data(), data.size(), strata::DataType::f32},
                    strata::ReduceOp::sum);
    bool right = true;
    for (float v : data) right &= v == static_cast<float>(n * (n + 1) / 2);
    checks.check(right, "the host all_reduce is right");
    // Host memory standing in for device memory: the call must be refused
    // before anything touches it.
    std::vector<float> a(4, 1.0f), b(4);
    try {
      comm.all_reduce({a.data(), 4, strata::DataType::f32, strata::Memory::cuda, -1},
                      {b.data(), 4, strata::DataType::f32, strata::Memory::cuda, -1}, strata::ReduceOp::sum);
      checks.check(false, "a CUDA tensor ran without the GPU plugin");
    } catch (const strata::Unavailable& e) {
      const bool named = std::string(e.what()).find(reason) != std::string::npos;
      checks.check(named, "Unavailable names '" + reason + "': " + e.what());
      if (named && rank == 0) std::printf("without_plugin: Unavailable: %s\n", e.what());
    } catch (const std::exception& e) {
      checks.check(false, std::string("a CUDA tensor raised another error than Unavailable: ") + e.what());
    }
    // And host calls still work afterwards.
    std::vector<int> ranks(8, rank);
    comm.all_reduce({ranks.data(), ranks.size(), strata::DataType::i32},
                    {ranks.data(), ranks.size(), strata::DataType::i32}, strata::ReduceOp::max);
    right = true;
    for (int v : ranks) right &= v == n - 1;
    checks.check(right, "the host all_reduce after the CUDA call is right");
    status = checks.finish();
  }
  MPI_Finalize();
  return status;
}
