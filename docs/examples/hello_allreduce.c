// The README's C example: a mean all-reduce of one small vector per rank.
#include <mpi.h>
#include <stdio.h>
#include <strata/strata.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  strata_comm* comm = NULL;
  int rank = 0;
  strata_status status = strata_comm_create(MPI_COMM_WORLD, NULL, &comm);  // collective
  if (status == STRATA_OK) status = strata_comm_rank(comm, &rank);
  float grad[4] = {(float)rank, (float)rank, (float)rank, (float)rank};
  strata_options options = STRATA_OPTIONS_INIT;
  options.timeout_seconds = 30;
  if (status == STRATA_OK) status = strata_all_reduce(comm, grad, grad, 4, STRATA_F32, STRATA_MEAN, &options);
  if (status != STRATA_OK) fprintf(stderr, "%s: %s\n", strata_status_name(status), strata_last_error());
  else if (rank == 0) printf("mean of ranks = %g\n", grad[0]);
  strata_comm_free(&comm);  // before MPI_Finalize
  MPI_Finalize();
  return status == STRATA_OK ? 0 : 1;
}
