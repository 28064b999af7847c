/* How far apart two ranks sit: the time to exchange one cache line.
 *
 *   mpicc -O2 scripts/profile/line_exchange.c -o /tmp/line_exchange
 *   build/strata-launch -n 2 /tmp/line_exchange
 *
 * Two ranks of one node share a page (MPI_Win_allocate_shared); each
 * round, each stores the round number in its own line and waits until it
 * sees the other's: the time per round is about one line transfer between
 * their cores, the floor under any small collective between them. Prints
 * the median of five runs of 200000 rounds, in microseconds. On the 2-core
 * VMs of docs/ALGORITHMS.md it separates the placements ("Near and far
 * ranks"): about 0.02-0.06 us near, 0.2-0.3 us far. */
#include <mpi.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "sample.h"

enum { kRuns = 5, kRounds = 200000, kLineWords = 8 };

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != 2) {
    if (rank == 0) fprintf(stderr, "line_exchange: run it on 2 ranks of one node\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  MPI_Win window;
  _Atomic unsigned long* base = NULL;
  MPI_Win_allocate_shared(rank == 0 ? 4096 : 0, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &base, &window);
  MPI_Aint bytes = 0;
  int unit = 0;
  MPI_Win_shared_query(window, 0, &bytes, &unit, &base);
  _Atomic unsigned long* mine = base + kLineWords * rank;  // one 64-byte line each
  _Atomic unsigned long* theirs = base + kLineWords * (1 - rank);
  if (rank == 0) atomic_store(base, 0), atomic_store(base + kLineWords, 0);
  MPI_Barrier(MPI_COMM_WORLD);
  double per_round[kRuns];
  unsigned long round = 0;
  for (int run = 0; run < kRuns; ++run) {
    MPI_Barrier(MPI_COMM_WORLD);
    const double start = MPI_Wtime();
    for (int i = 0; i < kRounds; ++i) {
      ++round;
      atomic_store_explicit(mine, round, memory_order_release);
      while (atomic_load_explicit(theirs, memory_order_acquire) < round) {
      }
    }
    per_round[run] = (MPI_Wtime() - start) / kRounds * 1e6;
  }
  qsort(per_round, kRuns, sizeof(double), ascending);
  if (rank == 0) printf("line exchange: %.3f us per round (median of %d runs)\n", per_round[kRuns / 2], kRuns);
  MPI_Win_free(&window);
  MPI_Finalize();
  return 0;
}
