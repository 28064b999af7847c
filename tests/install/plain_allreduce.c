/* A plain MPI program that has never heard of strata: the prefix install
 * test (check_prefix.sh) builds it with mpicc alone and runs it with the
 * installed libstrata_mpi.so preloaded. Sums rank + 1 over the ranks in
 * float and prints "plain: rank R: sum S" (S = n(n+1)/2) or what was wrong. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  float data[256];
  for (int i = 0; i < 256; ++i) data[i] = (float)(rank + 1);
  MPI_Allreduce(MPI_IN_PLACE, data, 256, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  int wrong = 0;
  for (int i = 0; i < 256; ++i) wrong += data[i] != (float)(size * (size + 1) / 2);
  if (wrong) printf("plain: rank %d: %d wrong values\n", rank, wrong);
  else printf("plain: rank %d: sum %g\n", rank, data[0]);
  MPI_Finalize();
  return wrong ? 1 : 0;
}
