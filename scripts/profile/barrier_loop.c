/* OSU's timing loop, with strata and the MPI it replaces in one process.
 *
 *   mpicc -O2 scripts/profile/barrier_loop.c -o /tmp/barrier_loop
 *   build/strata-launch -n 2 --env LD_PRELOAD=$PWD/build/lib/interpose/libstrata_mpi.so /tmp/barrier_loop WHICH
 *
 * WHICH: 0 MPI_Allreduce, 1 MPI_Reduce (root 0), 2 MPI_Bcast (root 0); f32
 * sum. Each iteration times one call, then waits in MPI_Barrier, and a run
 * reports the ranks' average time per call, as OSU's osu_allreduce,
 * osu_reduce and osu_bcast do. The program calls MPI_* (routed to strata by
 * the preloaded interposer) and PMPI_* (Open MPI itself, never routed) in
 * alternating runs of 3000 calls, five of each per size, and prints per size
 * the median of each and their ratio (MPI / strata: above 1 strata is
 * faster). Both sides meet the same placement of the ranks, which on a VM
 * can change from one mpirun to the next (docs/PERFORMANCE.md). Without the
 * interposer both columns are Open MPI's. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "osu_loop.h"

enum { kRuns = 5, kCalls = 3000, kSkip = 200 };

/* The ranks' average of each rank's mean time per call, in microseconds. */
static double timed_run(int pmpi, int which, float* in, float* out, int count) {
  double total = 0;
  for (int i = 0; i < kSkip + kCalls; ++i) {
    const double start = MPI_Wtime();
    call(pmpi, which, in, out, count);
    const double stop = MPI_Wtime();
    PMPI_Barrier(MPI_COMM_WORLD);
    if (i >= kSkip) total += stop - start;
  }
  double mine = total / kCalls * 1e6, sum = 0;
  int size = 1;
  PMPI_Allreduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  PMPI_Comm_size(MPI_COMM_WORLD, &size);
  return sum / size;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const int which = argc > 1 ? atoi(argv[1]) : 0;
  if (which < 0 || which > 2) {
    fprintf(stderr, "barrier_loop: WHICH is 0 (MPI_Allreduce), 1 (MPI_Reduce) or 2 (MPI_Bcast)\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  static float in[1024], out[1024];
  const int bytes[] = {8, 64, 256, 1024, 4096};
  if (rank == 0) printf("# %s: bytes, strata us, MPI us, MPI / strata (medians of %d runs of %d calls)\n",
                        which == 0 ? "MPI_Allreduce" : which == 1 ? "MPI_Reduce" : "MPI_Bcast", kRuns, kCalls);
  for (int k = 0; k < (int)(sizeof bytes / sizeof bytes[0]); ++k) {
    const int count = bytes[k] / 4;
    double strata[kRuns], mpi[kRuns];
    for (int run = 0; run < kRuns; ++run) {
      mpi[run] = timed_run(1, which, in, out, count);
      strata[run] = timed_run(0, which, in, out, count);
    }
    qsort(strata, kRuns, sizeof(double), ascending);
    qsort(mpi, kRuns, sizeof(double), ascending);
    if (rank == 0)
      printf("%d %.3f %.3f %.2f\n", bytes[k], strata[kRuns / 2], mpi[kRuns / 2], mpi[kRuns / 2] / strata[kRuns / 2]);
  }
  MPI_Finalize();
  return 0;
}
