// The smallest strata application: built against the installed headers and
// library only (see check_install.sh; the MPI test harness's core, which
// knows nothing of strata, is its only other part), it all-reduces one
// vector and checks the result, so a broken install (missing header, bad
// pkg-config file, unresolved symbol) fails here rather than in a user's
// build.
#include <mpi.h>
#include <strata/strata.hpp>

#include <cstdio>
#include <vector>

#include "harness_checks.hpp"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int status = 0;
  {
    strata::test::RankChecks checks("hello", 60);
    strata::Communicator comm(MPI_COMM_WORLD);
    const int n = comm.size();
    std::vector<float> data(1000, static_cast<float>(comm.rank() + 1));
    comm.all_reduce({data.data(), data.size(), strata::DataType::f32}, {data.data(), data.size(), strata::DataType::f32},
                    strata::ReduceOp::sum);
    const float want = static_cast<float>(n * (n + 1) / 2);
    bool ok = true;
    for (float v : data) ok = ok && v == want;
    checks.check(ok, "all_reduce of rank + 1 gives n(n+1)/2 in every element");
    std::printf("strata %s rank %d of %d: all_reduce %s\n", strata::version, comm.rank(), n, ok ? "ok" : "WRONG");
    std::fflush(stdout);
    status = checks.finish();
  }
  MPI_Finalize();
  return status;
}
