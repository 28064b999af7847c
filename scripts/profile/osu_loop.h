/* What barrier_loop.c and rank_times.c share: the one collective their
 * OSU-style loop times, through strata (MPI_*, routed by a preloaded
 * interposer) or Open MPI itself (PMPI_*, never routed), and (sample.h) the
 * clock and comparator. Included by those two programs only. */
#ifndef STRATA_PROFILE_OSU_LOOP_H
#define STRATA_PROFILE_OSU_LOOP_H

#include <mpi.h>

#include "sample.h"

/* WHICH: 0 MPI_Allreduce, 1 MPI_Reduce (root 0), 2 MPI_Bcast (root 0); f32
 * sum on MPI_COMM_WORLD. pmpi: Open MPI's own call instead of the routed one. */
static void call(int pmpi, int which, float* in, float* out, int count) {
  if (which == 0) {
    if (pmpi) PMPI_Allreduce(in, out, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    else MPI_Allreduce(in, out, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  } else if (which == 1) {
    if (pmpi) PMPI_Reduce(in, out, count, MPI_FLOAT, MPI_SUM, 0, MPI_COMM_WORLD);
    else MPI_Reduce(in, out, count, MPI_FLOAT, MPI_SUM, 0, MPI_COMM_WORLD);
  } else {
    if (pmpi) PMPI_Bcast(in, count, MPI_FLOAT, 0, MPI_COMM_WORLD);
    else MPI_Bcast(in, count, MPI_FLOAT, 0, MPI_COMM_WORLD);
  }
}

#endif
