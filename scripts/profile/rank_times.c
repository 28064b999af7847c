/* Each rank's share of a small call in OSU's loop, and who waits for whom.
 *
 *   mpicc -O2 scripts/profile/rank_times.c -o /tmp/rank_times
 *   build/strata-launch -n 2 --env LD_PRELOAD=$PWD/build/lib/interpose/libstrata_mpi.so /tmp/rank_times WHICH [BYTES]
 *
 * WHICH: 0 MPI_Allreduce, 1 MPI_Reduce (root 0), 2 MPI_Bcast (root 0); f32
 * sum; BYTES (default 8; a multiple of 4, at most 1 MiB). The loop is
 * barrier_loop.c's (and OSU's): time one call, then wait in MPI_Barrier. It alternates Open MPI
 * (PMPI_*, never routed) and the MPI_* the preloaded interposer routes to
 * strata, four rounds of 3000 calls each, and prints per round and side,
 * per rank, the median time inside the call and the median time the rank
 * entered it after rank 0 (negative: before). An average over the ranks
 * (what OSU prints) hides which rank waits: a root that waits for a late
 * peer, a peer that leaves at once after an eager send, both ranks paying
 * the call's own path. Entry times come from CLOCK_MONOTONIC, which the
 * ranks of one node share. Without the interposer both sides are Open
 * MPI's. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "osu_loop.h"

enum { kRounds = 4, kCalls = 3000, kSkip = 200, kMaxBytes = 1 << 20 };

static double median(double* values, int n) {
  qsort(values, (size_t)n, sizeof(double), ascending);
  return values[n / 2];
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int which = argc > 1 ? atoi(argv[1]) : 0;
  const int bytes = argc > 2 ? atoi(argv[2]) : 8;
  if (which < 0 || which > 2 || bytes < 4 || bytes > kMaxBytes || bytes % 4 != 0) {
    if (rank == 0)
      fprintf(stderr, "rank_times: WHICH is 0 (MPI_Allreduce), 1 (MPI_Reduce) or 2 (MPI_Bcast); BYTES a multiple "
                      "of 4 from 4 to %d\n", kMaxBytes);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  static float in[kMaxBytes / 4], out[kMaxBytes / 4];
  static double entered[kCalls], left[kCalls], theirs[2 * kCalls], inside[kCalls], after[kCalls];
  if (rank == 0)
    printf("# %s, %d B, %d ranks: per round and side, each rank's median us inside the call / entering it after "
           "rank 0\n",
           which == 0 ? "MPI_Allreduce" : which == 1 ? "MPI_Reduce" : "MPI_Bcast", bytes, size);
  for (int round = 0; round < kRounds; ++round) {
    for (int pmpi = 1; pmpi >= 0; --pmpi) {
      for (int i = 0; i < kSkip + kCalls; ++i) {
        const double start = now_ns();
        call(pmpi, which, in, out, bytes / 4);
        const double stop = now_ns();
        PMPI_Barrier(MPI_COMM_WORLD);
        if (i >= kSkip) entered[i - kSkip] = start, left[i - kSkip] = stop;
      }
      if (rank == 0) {
        printf("round %d %-7s", round, pmpi ? "Open MPI" : "MPI_*");
        for (int r = 0; r < size; ++r) {
          const double* e = entered;
          const double* l = left;
          if (r > 0) {
            PMPI_Recv(theirs, 2 * kCalls, MPI_DOUBLE, r, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            e = theirs, l = theirs + kCalls;
          }
          for (int i = 0; i < kCalls; ++i) inside[i] = (l[i] - e[i]) / 1e3, after[i] = (e[i] - entered[i]) / 1e3;
          printf("  rank %d %.3f / %+.3f", r, median(inside, kCalls), median(after, kCalls));
        }
        printf("\n");
      } else {
        for (int i = 0; i < kCalls; ++i) theirs[i] = entered[i], theirs[kCalls + i] = left[i];
        PMPI_Send(theirs, 2 * kCalls, MPI_DOUBLE, 0, 0, MPI_COMM_WORLD);
      }
    }
  }
  MPI_Finalize();
  return 0;
}
