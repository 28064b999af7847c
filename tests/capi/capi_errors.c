/* The C API's error boundary for blocking calls and communicators: bad
 * arguments give STRATA_ERR_INVALID_ARGUMENT on every rank with a message
 * naming the field; ranks that disagree get STRATA_ERR_MISMATCH; CUDA
 * memory without a GPU gives STRATA_ERR_UNAVAILABLE on every rank; a
 * missing rank gives DEADLINE_EXCEEDED, then PEER_FAILURE from
 * strata_comm_check and the next call. */
#include "capi_check.h"
#include "capi_topics.h"

#include <mpi.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* strata_comm_check on a usable communicator: STRATA_OK, and the last
 * error left alone; a NULL handle is refused naming it. The flight record
 * without STRATA_FLIGHT_DIR (unset in the tests' environment): refused,
 * saying to set it, the path buffer left alone. */
void test_check(strata_comm* comm) {
  char saved[512];
  char path[64] = "untouched";
  capi_step("check");
  EXPECT(strata_comm_dump_flight_record(NULL, NULL, 0), STRATA_ERR_INVALID_ARGUMENT,
         "strata_comm_dump_flight_record", "comm");
  if (getenv("STRATA_FLIGHT_DIR") == NULL) {
    EXPECT(strata_comm_dump_flight_record(comm, path, sizeof path), STRATA_ERR_INVALID_ARGUMENT,
           "strata_comm_dump_flight_record", "STRATA_FLIGHT_DIR");
    CHECK(strcmp(path, "untouched") == 0);
  }
  EXPECT(strata_comm_check(NULL), STRATA_ERR_INVALID_ARGUMENT, "strata_comm_check", "comm");
  snprintf(saved, sizeof saved, "%s", strata_last_error());
  EXPECT(strata_comm_check(comm), STRATA_OK, "strata_comm_check", "");
  EXPECT(strata_comm_check(comm), STRATA_OK, "strata_comm_check", "");
  CHECK(strcmp(saved, strata_last_error()) == 0);
}

/* Every invalid argument, passed by every rank: each must return
 * STRATA_ERR_INVALID_ARGUMENT with a message naming the field, and leave
 * the communicator usable. */
void test_invalid_arguments(strata_comm* comm) {
  float buf[N] = {0};
  size_t counts[2] = {N / 2, N / 2};
  void* overlapping[2];
  strata_dtype dtypes[2] = {STRATA_F32, STRATA_F32};
  strata_options options = STRATA_OPTIONS_INIT;
  strata_packing packing = STRATA_PACKING_INIT;
  strata_config config = STRATA_CONFIG_INIT;
  strata_comm* made = (strata_comm*)&config; /* must come back NULL */
  int value = -7, broken = -1;
  char saved[512];
  const strata_status bad = STRATA_ERR_INVALID_ARGUMENT;
  capi_step("invalid arguments");

  EXPECT(strata_all_reduce(NULL, buf, buf, N, STRATA_F32, STRATA_SUM, NULL), bad, "strata_all_reduce", "comm");
  EXPECT(strata_all_reduce(comm, NULL, buf, N, STRATA_F32, STRATA_SUM, NULL), bad, "strata_all_reduce", "in.data");
  EXPECT(strata_all_reduce(comm, buf, NULL, N, STRATA_F32, STRATA_SUM, NULL), bad, "strata_all_reduce", "out.data");
  EXPECT(strata_all_reduce(comm, buf, buf + 1, N - 1, STRATA_F32, STRATA_SUM, NULL), bad, "strata_all_reduce",
         "overlap");
  EXPECT(strata_all_reduce(comm, buf, buf, N, (strata_dtype)99, STRATA_SUM, NULL), bad, "strata_all_reduce", "dtype");
  EXPECT(strata_all_reduce(comm, buf, buf, N, STRATA_F32, (strata_op)42, NULL), bad, "strata_all_reduce", "op");
  options.timeout_seconds = -1.0;
  EXPECT(strata_all_reduce(comm, buf, buf, N, STRATA_F32, STRATA_SUM, &options), bad, "strata_all_reduce",
         "timeout_seconds");
  options.timeout_seconds = NAN;
  EXPECT(strata_all_reduce(comm, buf, buf, N, STRATA_F32, STRATA_SUM, &options), bad, "strata_all_reduce",
         "timeout_seconds");
  strata_options_init(&options);
  options.implementation = (strata_implementation)9;
  EXPECT(strata_all_reduce(comm, buf, buf, N, STRATA_F32, STRATA_SUM, &options), bad, "strata_all_reduce",
         "implementation");
  strata_options_init(&options);
  options.memory = (strata_memory)7;
  EXPECT(strata_all_reduce(comm, buf, buf, N, STRATA_F32, STRATA_SUM, &options), bad, "strata_all_reduce", "memory");

  EXPECT(strata_reduce(comm, buf, buf, N, STRATA_F32, STRATA_SUM, g_size, NULL), bad, "strata_reduce", "root");
  EXPECT(strata_reduce(comm, buf, buf, N, STRATA_F32, STRATA_SUM, -1, NULL), bad, "strata_reduce", "root");
  EXPECT(strata_broadcast(comm, buf, N, STRATA_F32, g_size, NULL), bad, "strata_broadcast", "root");
  EXPECT(strata_broadcast(comm, NULL, N, STRATA_F32, 0, NULL), bad, "strata_broadcast", "buffer.data");

  /* Blockwise: 4 elements per rank, at most 4 x 4 + 1 of buf. */
  EXPECT(strata_reduce_scatter(NULL, buf, buf, 4, STRATA_F32, STRATA_SUM, NULL), bad, "strata_reduce_scatter",
         "comm");
  EXPECT(strata_reduce_scatter(comm, NULL, buf, 4, STRATA_F32, STRATA_SUM, NULL), bad, "strata_reduce_scatter",
         "in.data");
  EXPECT(strata_reduce_scatter(comm, buf, NULL, 4, STRATA_F32, STRATA_SUM, NULL), bad, "strata_reduce_scatter",
         "out.data");
  EXPECT(strata_reduce_scatter(comm, buf, buf + 1, 4, STRATA_F32, STRATA_SUM, NULL), bad, "strata_reduce_scatter",
         "overlaps"); /* overlapping, and no rank's block */
  EXPECT(strata_reduce_scatter(comm, buf, buf + N - 4, 4, STRATA_F32, (strata_op)42, NULL), bad,
         "strata_reduce_scatter", "op");
  EXPECT(strata_reduce_scatter(comm, buf, buf + N - 4, SIZE_MAX / 2 + 1, STRATA_F32, STRATA_SUM, NULL), bad,
         "strata_reduce_scatter", g_size > 1 ? "recv_count" : "in.count"); /* size x recv_count overflows */
  EXPECT(strata_all_gather(comm, NULL, buf, 4, STRATA_F32, NULL), bad, "strata_all_gather", "in.data");
  EXPECT(strata_all_gather(comm, buf + 1, buf, 4, STRATA_F32, NULL), bad, "strata_all_gather", "overlaps");
  EXPECT(strata_all_gather(comm, buf + N - 4, buf, 4, (strata_dtype)99, NULL), bad, "strata_all_gather", "dtype");
  EXPECT(strata_all_gather(comm, buf + N - 4, buf, SIZE_MAX / 2 + 1, STRATA_F32, NULL), bad, "strata_all_gather",
         g_size > 1 ? "send_count" : "in.count");
  strata_options_init(&options);
  options.implementation = STRATA_IMPL_NCCL;
  EXPECT(strata_all_gather(comm, buf + N - 4, buf, 4, STRATA_F32, &options), bad, "strata_all_gather", "nccl");
  strata_options_init(&options);

  EXPECT(strata_batch_all_reduce(comm, NULL, counts, dtypes, 2, STRATA_SUM, NULL, NULL), bad,
         "strata_batch_all_reduce", "buffers");
  overlapping[0] = buf, overlapping[1] = buf + N / 4;
  EXPECT(strata_batch_all_reduce(comm, overlapping, counts, dtypes, 2, STRATA_SUM, NULL, NULL), bad,
         "strata_batch_all_reduce", "overlap");
  overlapping[1] = buf + N / 2;
  packing.num_packs = -1;
  EXPECT(strata_batch_all_reduce(comm, overlapping, counts, dtypes, 2, STRATA_SUM, &packing, NULL), bad,
         "strata_batch_all_reduce", "num_packs");
  options.memory = STRATA_MEMORY_HOST;
  options.bytes_per_pack = -1;
  EXPECT(strata_batch_all_reduce(comm, overlapping, counts, dtypes, 2, STRATA_SUM, NULL, &options), bad,
         "strata_batch_all_reduce", "bytes_per_pack");

  EXPECT(strata_comm_rank(comm, NULL), bad, "strata_comm_rank", "rank");
  EXPECT(strata_comm_size(NULL, &value), bad, "strata_comm_size", "comm");
  EXPECT(strata_comm_broken(NULL, &broken), bad, "strata_comm_broken", "comm");
  EXPECT(strata_comm_create(MPI_COMM_WORLD, NULL, NULL), bad, "strata_comm_create", "out");
  EXPECT(strata_comm_create(MPI_COMM_NULL, NULL, &made), bad, "strata_comm_create", "MPI_COMM_NULL");
  CHECK(made == NULL);
  config.all_reduce_spec = "no-such-algorithm";
  made = (strata_comm*)&config;
  EXPECT(strata_comm_create(MPI_COMM_WORLD, &config, &made), bad, "strata_comm_create", "no-such-algorithm");
  CHECK(made == NULL);
  config.all_reduce_spec = NULL;
  config.reproducible = "bitwise";
  EXPECT(strata_comm_create(MPI_COMM_WORLD, &config, &made), bad, "strata_comm_create", "bitwise");
  CHECK(made == NULL);
  config.reproducible = NULL;

  /* Successful calls leave the last error alone; the communicator still works. */
  snprintf(saved, sizeof saved, "%s", strata_last_error());
  EXPECT(strata_comm_broken(comm, &broken), STRATA_OK, "strata_comm_broken", "");
  CHECK(broken == 0);
  EXPECT(strata_all_reduce(comm, buf, buf, N, STRATA_F32, STRATA_SUM, NULL), STRATA_OK, "strata_all_reduce", "");
  CHECK(strcmp(saved, strata_last_error()) == 0);
}

/* Ranks that disagree on a call (the last rank passes one element more):
 * every rank gets STRATA_ERR_MISMATCH naming the count, and the
 * communicator still works. */
void test_mismatch(strata_comm* comm) {
  float buf[N + 1] = {0};
  int size = 0;
  capi_step("mismatch");
  strata_comm_size(comm, &size);
  if (size < 2) return;
  const size_t count = g_rank == size - 1 ? N + 1 : N;
  EXPECT(strata_all_reduce(comm, buf, buf, count, STRATA_F32, STRATA_SUM, NULL), STRATA_ERR_MISMATCH,
         "strata_all_reduce", "count");
  /* Each rank's own buffers are consistent (in = size x recv_count), but the
   * last rank's block is one element longer. */
  EXPECT(strata_reduce_scatter(comm, buf, buf + N - 5, g_rank == size - 1 ? 5 : 4, STRATA_F32, STRATA_SUM, NULL),
         STRATA_ERR_MISMATCH, "strata_reduce_scatter", "count");
  test_all_reduce(comm, N, NULL);
  test_reduce_scatter(comm, 7, NULL);
}

/* CUDA memory, count 0 (no buffer is touched): with a usable GPU the call
 * succeeds; without one (this CI) every rank gets STRATA_ERR_UNAVAILABLE.
 * Either way all ranks agree and the communicator stays usable. */
void test_cuda_memory(strata_comm* comm) {
  strata_options options = STRATA_OPTIONS_INIT;
  int status, lowest, highest, broken = -1;
  capi_step("cuda memory");
  options.memory = STRATA_MEMORY_CUDA;
  status = (int)strata_all_reduce(comm, NULL, NULL, 0, STRATA_F32, STRATA_SUM, &options);
  MPI_Allreduce(&status, &lowest, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(&status, &highest, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  CHECK(lowest == highest);
  CHECK(status == STRATA_OK || status == STRATA_ERR_UNAVAILABLE);
  if (status == STRATA_ERR_UNAVAILABLE)
    EXPECT((strata_status)status, STRATA_ERR_UNAVAILABLE, "strata_all_reduce", "CUDA");
  if (g_rank == 0) printf("capi test: CUDA memory: %s\n", strata_status_name((strata_status)status));
  EXPECT(strata_comm_broken(comm, &broken), STRATA_OK, "strata_comm_broken", "");
  CHECK(broken == 0);
}

/* The last rank never calls; the others time out after 1 s with
 * DEADLINE_EXCEEDED, and then strata_comm_check and their next call get
 * PEER_FAILURE; the last rank's communicator still checks out fine. */
void test_deadline(void) {
  strata_comm* comm = NULL;
  strata_options options = STRATA_OPTIONS_INIT;
  float buf[N] = {0};
  int broken = -1;
  capi_step("deadline");
  EXPECT(strata_comm_create(MPI_COMM_WORLD, NULL, &comm), STRATA_OK, "strata_comm_create", "");
  if (g_rank != g_size - 1) {
    options.timeout_seconds = 1.0;
    EXPECT(strata_all_reduce(comm, buf, buf, N, STRATA_F32, STRATA_SUM, &options), STRATA_ERR_DEADLINE_EXCEEDED,
           "strata_all_reduce", "exceeded its timeout");
    EXPECT(strata_comm_check(comm), STRATA_ERR_PEER_FAILURE, "strata_comm_check", "broken");
    EXPECT(strata_comm_check(comm), STRATA_ERR_PEER_FAILURE, "strata_comm_check", "broken"); /* every time */
    EXPECT(strata_all_reduce(comm, buf, buf, N, STRATA_F32, STRATA_SUM, &options), STRATA_ERR_PEER_FAILURE,
           "strata_all_reduce", "broken");
  } else {
    EXPECT(strata_comm_check(comm), STRATA_OK, "strata_comm_check", "");
  }
  EXPECT(strata_comm_broken(comm, &broken), STRATA_OK, "strata_comm_broken", "");
  CHECK(broken == (g_rank != g_size - 1));
  EXPECT(strata_comm_free(&comm), STRATA_OK, "strata_comm_free", "");
  CHECK(comm == NULL);
}

