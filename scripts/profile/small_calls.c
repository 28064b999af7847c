/* A loop of one small MPI collective, for counting instructions per call
 * (scripts/profile/small_call_instructions.py runs it under callgrind).
 *   small_calls N WHICH     WHICH: 0 MPI_Reduce, 1 MPI_Allreduce, 2 MPI_Bcast
 * Two floats (8 bytes), sum, root 0, MPI_COMM_WORLD. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const int n = argc > 1 ? atoi(argv[1]) : 100000;
  const int which = argc > 2 ? atoi(argv[2]) : 0;
  float in[2] = {1, 2}, out[2];
  for (int i = 0; i < n; ++i) {
    if (which == 0) MPI_Reduce(in, out, 2, MPI_FLOAT, MPI_SUM, 0, MPI_COMM_WORLD);
    else if (which == 1) MPI_Allreduce(in, out, 2, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    else MPI_Bcast(in, 2, MPI_FLOAT, 0, MPI_COMM_WORLD);
  }
  MPI_Finalize();
  return 0;
}
