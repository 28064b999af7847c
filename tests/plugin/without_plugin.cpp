// A program of the public API run where the GPU plugin cannot be loaded
// (check_plugin.sh hides it, or the CUDA runtime it needs): host
// collectives must work as ever, and a CUDA tensor must raise
// strata::Unavailable whose message names the reason, which contains
// argv[1]. Prints "without_plugin: rank R: ok" or what was wrong.
#include <mpi.h>
#include <strata/strata.hpp>

#include <cstdio>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const std::string reason = argc > 1 ? argv[1] : "";
  std::string wrong;
  int rank = 0;
  {
    strata::Communicator comm(MPI_COMM_WORLD);
    rank = comm.rank();
    const int n = comm.size();
    std::vector<float> data(1000, static_cast<float>(rank + 1));
    comm.all_reduce({data.data(), data.size(), strata::DataType::f32}, {data.data(), data.size(), strata::DataType::f32},
                    strata::ReduceOp::sum);
    for (float v : data)
      if (v != static_cast<float>(n * (n + 1) / 2)) wrong = "the host all_reduce is wrong";
    // Host memory standing in for device memory: the call must be refused
    // before anything touches it.
    std::vector<float> a(4, 1.0f), b(4);
    try {
      comm.all_reduce({a.data(), 4, strata::DataType::f32, strata::Memory::cuda, -1},
                      {b.data(), 4, strata::DataType::f32, strata::Memory::cuda, -1}, strata::ReduceOp::sum);
      wrong = "a CUDA tensor ran without the GPU plugin";
    } catch (const strata::Unavailable& e) {
      if (std::string(e.what()).find(reason) == std::string::npos)
        wrong = "Unavailable does not name '" + reason + "': " + e.what();
      else if (rank == 0)
        std::printf("without_plugin: Unavailable: %s\n", e.what());
    } catch (const std::exception& e) {
      wrong = std::string("a CUDA tensor raised another error than Unavailable: ") + e.what();
    }
    // And host calls still work afterwards.
    std::vector<int> ranks(8, rank);
    comm.all_reduce({ranks.data(), ranks.size(), strata::DataType::i32},
                    {ranks.data(), ranks.size(), strata::DataType::i32}, strata::ReduceOp::max);
    for (int v : ranks)
      if (v != n - 1 && wrong.empty()) wrong = "the host all_reduce after the CUDA call is wrong";
  }
  MPI_Finalize();
  if (wrong.empty()) std::printf("without_plugin: rank %d: ok\n", rank);
  else std::printf("without_plugin: rank %d: %s\n", rank, wrong.c_str());
  return wrong.empty() ? 0 : 1;
}
