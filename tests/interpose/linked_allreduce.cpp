// A plain MPI program linked with -lstrata_mpi ahead of libmpi instead of
// preloading it: its MPI_Allreduce must resolve to the interposer's (the
// dynamic linker takes the first definition in link order). Sums
// rank-dependent integers in f32 and f64, in place and not, and checks them
// against the closed form; prints "linked: rank R: ok" or what was wrong.
#include <mpi.h>

#include <cstdio>
#include <vector>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int n = 1000;
  int wrong = 0;
  std::vector<float> f(n);
  std::vector<double> in(n), out(n);
  for (int i = 0; i < n; ++i) f[i] = static_cast<float>(i + rank), in[i] = i * rank;
  MPI_Allreduce(MPI_IN_PLACE, f.data(), n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Allreduce(in.data(), out.data(), n, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  for (int i = 0; i < n; ++i) {
    if (f[i] != static_cast<float>(i * size + size * (size - 1) / 2)) ++wrong;
    if (out[i] != static_cast<double>(i * (size - 1))) ++wrong;
  }
  if (wrong) std::printf("linked: rank %d: %d wrong values\n", rank, wrong);
  else std::printf("linked: rank %d: ok\n", rank);
  MPI_Finalize();
  return wrong ? 1 : 0;
}
