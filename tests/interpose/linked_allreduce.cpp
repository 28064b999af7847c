// A plain MPI program linked with -lstrata_mpi ahead of libmpi instead of
// preloading it: its MPI_Allreduce must resolve to the interposer's (the
// dynamic linker takes the first definition in link order). Sums
// rank-dependent integers in f32 and f64, in place and not, and checks them
// against the closed form; prints "linked: rank R: P of N checks passed"
// (the MPI harness's core, which needs MPI only) and, when all passed,
// "linked: rank R: ok".
#include <mpi.h>

#include <cstdio>
#include <vector>

#include "harness_core.hpp"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  strata::test::start_program_checks("linked", 60);
  const int rank = strata::test::world_rank(), size = strata::test::world_size();
  const int n = 1000;
  int wrong_sums = 0, wrong_maxima = 0;
  std::vector<float> f(n);
  std::vector<double> in(n), out(n);
  for (int i = 0; i < n; ++i) f[i] = static_cast<float>(i + rank), in[i] = i * rank;
  MPI_Allreduce(MPI_IN_PLACE, f.data(), n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Allreduce(in.data(), out.data(), n, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  for (int i = 0; i < n; ++i) {
    wrong_sums += f[i] != static_cast<float>(i * size + size * (size - 1) / 2);
    wrong_maxima += out[i] != static_cast<double>(i * (size - 1));
  }
  strata::test::rank_check(wrong_sums == 0, std::to_string(wrong_sums) + " wrong f32 sums");
  strata::test::rank_check(wrong_maxima == 0, std::to_string(wrong_maxima) + " wrong f64 maxima");
  // tests/plugin/check_plugin.sh looks for "linked: rank R: ok" as well.
  if (strata::test::program_checks().failures() == 0) std::printf("linked: rank %d: ok\n", rank);
  const int status = strata::test::program_checks().finish_rank();
  MPI_Finalize();
  return status;
}
