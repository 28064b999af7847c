/* The C API's requests: every non-blocking call outstanding at once and
 * waited out of order, persistent calls rerun on new data, the progress
 * thread completing a call nobody waits on, and requests outliving their
 * communicator. */
#include "capi_check.h"
#include "capi_topics.h"

#include <mpi.h>

#include <stdlib.h>

/* Every non-blocking call outstanding at once (f32 sum out of place, i64
 * sum to the last rank, f64 broadcast from rank 1, f32 reduce_scatter sum,
 * f64 all_gather, a batch of three dtypes in place), waited in reverse
 * order (one by a test loop), each checked against values computed here
 * from inputs that differ per call, rank and block, so a request that ran
 * on another call's buffer fails. Then every handle is freed. */
void test_nonblocking(strata_comm* comm, size_t count, const strata_options* options) {
  const size_t whole = count * (size_t)g_size, mine = count * (size_t)g_rank;
  const int root = 1 % g_size, last = g_size - 1;
  float* ain = malloc((count + 1) * sizeof *ain);
  float* aout = malloc((count + 1) * sizeof *aout);
  int64_t* rin = malloc((count + 1) * sizeof *rin);
  int64_t* rout = malloc((count + 1) * sizeof *rout);
  double* bbuf = malloc((count + 1) * sizeof *bbuf);
  float* sin = malloc((whole + 1) * sizeof *sin);
  float* sout = malloc((count + 1) * sizeof *sout);
  double* gin = malloc((count + 1) * sizeof *gin);
  double* gout = malloc((whole + 1) * sizeof *gout);
  float* b0 = malloc((count + 1) * sizeof *b0);
  int32_t b1[5];
  uint64_t* b2 = malloc((count + 1) * sizeof *b2);
  void* buffers[3];
  size_t counts[3];
  strata_dtype dtypes[3] = {STRATA_F32, STRATA_I32, STRATA_U64};
  strata_request* req[6] = {NULL, NULL, NULL, NULL, NULL, NULL};
  size_t i, j;
  int r, k, bad, flag = 0;
  strata_status status;
  capi_step("non-blocking");
  for (i = 0; i < count; ++i) ain[i] = (float)(0.5 * (g_rank + 1) + (double)(i % 17)), aout[i] = -1.0f;
  for (i = 0; i < count; ++i) rin[i] = (int64_t)g_rank * 1000000007LL + (int64_t)i * 3, rout[i] = -1;
  for (i = 0; i < count; ++i) bbuf[i] = g_rank == root ? 1.0 / (double)(i + 1) : -1.0;
  for (j = 0; j < whole; ++j) sin[j] = f32_input(g_rank, j);
  for (i = 0; i < count; ++i) sout[i] = -1.0f;
  for (i = 0; i < count; ++i) gin[i] = g_rank * 1e6 + (double)i + 0.25;
  for (j = 0; j < whole; ++j) gout[j] = -1.0;
  for (i = 0; i < count; ++i) b0[i] = (float)(g_rank + 1) * 0.25f * (float)(i % 9), b2[i] = (uint64_t)g_rank << 33 | i;
  for (i = 0; i < 5; ++i) b1[i] = (int32_t)(g_rank - 2) * (int32_t)(i + 1);
  buffers[0] = b0, buffers[1] = b1, buffers[2] = b2;
  counts[0] = count, counts[1] = 5, counts[2] = count;

  EXPECT(strata_iall_reduce(comm, ain, aout, count, STRATA_F32, STRATA_SUM, options, &req[0]), STRATA_OK,
         "strata_iall_reduce", "");
  EXPECT(strata_ireduce(comm, rin, g_rank == last ? rout : NULL, count, STRATA_I64, STRATA_SUM, last, options, &req[1]),
         STRATA_OK, "strata_ireduce", "");
  EXPECT(strata_ibroadcast(comm, bbuf, count, STRATA_F64, root, options, &req[2]), STRATA_OK, "strata_ibroadcast", "");
  EXPECT(strata_ireduce_scatter(comm, sin, sout, count, STRATA_F32, STRATA_SUM, options, &req[3]), STRATA_OK,
         "strata_ireduce_scatter", "");
  EXPECT(strata_iall_gather(comm, gin, gout, count, STRATA_F64, options, &req[4]), STRATA_OK, "strata_iall_gather",
         "");
  EXPECT(strata_ibatch_all_reduce(comm, buffers, counts, dtypes, 3, STRATA_SUM, NULL, options, &req[5]), STRATA_OK,
         "strata_ibatch_all_reduce", "");
  /* The arrays describing the batch are copied: scribbling on them is harmless. */
  buffers[0] = buffers[1] = buffers[2] = NULL;
  counts[0] = counts[1] = counts[2] = 0;
  for (k = 0; k < 6; ++k) CHECK(req[k] != NULL);
  if (req[0] == NULL || req[1] == NULL || req[2] == NULL || req[3] == NULL || req[4] == NULL || req[5] == NULL)
    return;

  /* Out of order: the fourth waited, the last one by a test loop, then the rest from the back. */
  EXPECT(strata_request_wait(req[3]), STRATA_OK, "strata_request_wait", "");
  do status = strata_request_test(req[5], &flag);
  while (status == STRATA_OK && !flag);
  EXPECT(status, STRATA_OK, "strata_request_test", "");
  CHECK(flag == 1);
  for (k = 4; k >= 0; --k) EXPECT(strata_request_wait(req[k]), STRATA_OK, "strata_request_wait", "");
  /* Complete: waiting or testing again gives STRATA_OK and 1. */
  EXPECT(strata_request_wait(req[0]), STRATA_OK, "strata_request_wait", "");
  flag = 0;
  EXPECT(strata_request_test(req[0], &flag), STRATA_OK, "strata_request_test", "");
  CHECK(flag == 1);

  for (i = 0, bad = 0; i < count; ++i) {
    float expected = 0.0f;
    for (r = 0; r < g_size; ++r) expected += (float)(0.5 * (r + 1) + (double)(i % 17));
    bad += aout[i] != expected || ain[i] != (float)(0.5 * (g_rank + 1) + (double)(i % 17));
  }
  CHECK(bad == 0); /* iall_reduce: f32 sum out of place, `in` unchanged */
  if (g_rank == last) {
    for (i = 0, bad = 0; i < count; ++i) {
      int64_t expected = 0;
      for (r = 0; r < g_size; ++r) expected += (int64_t)r * 1000000007LL + (int64_t)i * 3;
      bad += rout[i] != expected;
    }
    CHECK(bad == 0); /* ireduce: i64 sum at the root */
  }
  for (i = 0, bad = 0; i < count; ++i) bad += bbuf[i] != 1.0 / (double)(i + 1);
  CHECK(bad == 0); /* ibroadcast */
  for (i = 0, bad = 0; i < count; ++i) {
    float expected = 0.0f;
    for (r = 0; r < g_size; ++r) expected += f32_input(r, mine + i);
    bad += sout[i] != expected;
  }
  CHECK(bad == 0); /* ireduce_scatter: this rank's block */
  for (j = 0, bad = 0; j < whole; ++j) bad += gout[j] != (double)(j / count) * 1e6 + (double)(j % count) + 0.25;
  CHECK(bad == 0); /* iall_gather: block r is rank r's input */
  for (i = 0, bad = 0; i < count; ++i) {
    float e0 = 0.0f;
    uint64_t e2 = 0;
    for (r = 0; r < g_size; ++r) e0 += (float)(r + 1) * 0.25f * (float)(i % 9), e2 += (uint64_t)r << 33 | i;
    bad += b0[i] != e0 || b2[i] != e2;
  }
  for (i = 0; i < 5; ++i) {
    int32_t e1 = 0;
    for (r = 0; r < g_size; ++r) e1 += (int32_t)(r - 2) * (int32_t)(i + 1);
    bad += b1[i] != e1;
  }
  CHECK(bad == 0); /* ibatch_all_reduce */

  for (k = 0; k < 6; ++k) {
    EXPECT(strata_request_free(&req[k]), STRATA_OK, "strata_request_free", "");
    CHECK(req[k] == NULL);
  }
  free(ain), free(aout), free(rin), free(rout), free(bbuf), free(sin), free(sout), free(gin), free(gout), free(b0);
  free(b2);
}

/* Persistent requests: an all_reduce bound once and started 6 times on new
 * data (waited, or tested until complete), the other four forms bound and
 * run twice with the inputs changed in between; starting a running
 * request or a non-blocking one is INVALID_ARGUMENT. */
void test_persistent(strata_comm* comm, const strata_options* options) {
  enum { C = 3001, B = 41 };
  const size_t whole = (size_t)B * (size_t)g_size, mine = (size_t)B * (size_t)g_rank;
  int32_t in[C] = {0}, out[C] = {0}; /* (bound before they are filled) */
  double bc[C];
  float* sin = malloc((whole + 1) * sizeof *sin);
  float sout[B];
  float* gout = malloc((whole + 1) * sizeof *gout);
  strata_request* req = NULL;
  strata_request* forms[4] = {NULL, NULL, NULL, NULL};
  strata_request* once = NULL;
  size_t i, j;
  int r, round, bad, flag, k;
  const int root = g_size - 1;
  capi_step("persistent");
  EXPECT(strata_all_reduce_init(comm, in, out, C, STRATA_I32, STRATA_MAX, options, &req), STRATA_OK,
         "strata_all_reduce_init", "");
  if (req == NULL) return;
  EXPECT(strata_request_wait(req), STRATA_OK, "strata_request_wait", ""); /* inactive: returns at once */
  flag = 0;
  EXPECT(strata_request_test(req, &flag), STRATA_OK, "strata_request_test", "");
  CHECK(flag == 1);
  for (round = 0; round < 6; ++round) {
    for (i = 0; i < C; ++i) in[i] = i32_input(g_rank + round, i), out[i] = -7;
    EXPECT(strata_request_start(req), STRATA_OK, "strata_request_start", "");
    EXPECT(strata_request_start(req), STRATA_ERR_INVALID_ARGUMENT, "strata_request_start", "still running");
    if (round % 2) {
      EXPECT(strata_request_wait(req), STRATA_OK, "strata_request_wait", "");
    } else {
      strata_status status;
      do status = strata_request_test(req, &flag);
      while (status == STRATA_OK && !flag);
      EXPECT(status, STRATA_OK, "strata_request_test", "");
    }
    for (i = 0, bad = 0; i < C; ++i) {
      int32_t expected = INT32_MIN;
      for (r = 0; r < g_size; ++r)
        if (i32_input(r + round, i) > expected) expected = i32_input(r + round, i);
      bad += out[i] != expected;
    }
    CHECK(bad == 0); /* this round's data, not an earlier round's */
  }
  EXPECT(strata_request_free(&req), STRATA_OK, "strata_request_free", "");
  CHECK(req == NULL);

  EXPECT(strata_reduce_init(comm, in, in, C, STRATA_I32, STRATA_SUM, 0, options, &forms[0]), STRATA_OK,
         "strata_reduce_init", "");
  EXPECT(strata_broadcast_init(comm, bc, C, STRATA_F64, root, options, &forms[1]), STRATA_OK, "strata_broadcast_init",
         "");
  EXPECT(strata_reduce_scatter_init(comm, sin, sout, B, STRATA_F32, STRATA_SUM, options, &forms[2]), STRATA_OK,
         "strata_reduce_scatter_init", "");
  EXPECT(strata_all_gather_init(comm, gout + mine, gout, B, STRATA_F32, options, &forms[3]), STRATA_OK,
         "strata_all_gather_init", ""); /* in place */
  for (k = 0; k < 4; ++k) CHECK(forms[k] != NULL);
  if (forms[0] == NULL || forms[1] == NULL || forms[2] == NULL || forms[3] == NULL) return;
  for (round = 0; round < 2; ++round) {
    for (i = 0; i < C; ++i) in[i] = (int32_t)(g_rank + 1) * (int32_t)(i % 11 + round);
    for (i = 0; i < C; ++i) bc[i] = g_rank == root ? (double)i * 0.5 + round : -1.0;
    for (j = 0; j < whole; ++j) sin[j] = f32_input(g_rank + round, j);
    for (j = 0; j < whole; ++j) gout[j] = j >= mine && j < mine + B ? f32_input(g_rank + round, j) : -1.0f;
    for (k = 0; k < 4; ++k) EXPECT(strata_request_start(forms[k]), STRATA_OK, "strata_request_start", "");
    for (k = 3; k >= 0; --k) EXPECT(strata_request_wait(forms[k]), STRATA_OK, "strata_request_wait", "");
    if (g_rank == 0) {
      for (i = 0, bad = 0; i < C; ++i) bad += in[i] != (int32_t)(g_size * (g_size + 1) / 2) * (int32_t)(i % 11 + round);
      CHECK(bad == 0); /* reduce_init in place at the root */
    }
    for (i = 0, bad = 0; i < C; ++i) bad += bc[i] != (double)i * 0.5 + round;
    CHECK(bad == 0); /* broadcast_init */
    for (i = 0, bad = 0; i < B; ++i) {
      float expected = 0.0f;
      for (r = 0; r < g_size; ++r) expected += f32_input(r + round, mine + i);
      bad += sout[i] != expected;
    }
    CHECK(bad == 0); /* reduce_scatter_init */
    for (j = 0, bad = 0; j < whole; ++j) bad += gout[j] != f32_input((int)(j / B) + round, j);
    CHECK(bad == 0); /* all_gather_init in place */
  }
  for (k = 0; k < 4; ++k) EXPECT(strata_request_free(&forms[k]), STRATA_OK, "strata_request_free", "");

  EXPECT(strata_iall_reduce(comm, in, in, C, STRATA_I32, STRATA_SUM, options, &once), STRATA_OK, "strata_iall_reduce",
         "");
  EXPECT(strata_request_start(once), STRATA_ERR_INVALID_ARGUMENT, "strata_request_start", "persistent");
  EXPECT(strata_request_free(&once), STRATA_OK, "strata_request_free", "");
  free(sin);
  free(gout);
}

/* A request outlives its communicator: strata_comm_free completes it (the
 * result is there, wait gives OK), and a persistent one can no longer
 * start. */
void test_request_after_comm_free(void) {
  strata_comm* comm = NULL;
  strata_request* started = NULL;
  strata_request* bound = NULL;
  int32_t values[N];
  size_t i;
  int bad;
  capi_step("request after strata_comm_free");
  EXPECT(strata_comm_create(MPI_COMM_WORLD, NULL, &comm), STRATA_OK, "strata_comm_create", "");
  for (i = 0; i < N; ++i) values[i] = (int32_t)i + g_rank;
  EXPECT(strata_iall_reduce(comm, values, values, N, STRATA_I32, STRATA_MIN, NULL, &started), STRATA_OK,
         "strata_iall_reduce", "");
  EXPECT(strata_all_reduce_init(comm, values, values, N, STRATA_I32, STRATA_MIN, NULL, &bound), STRATA_OK,
         "strata_all_reduce_init", "");
  EXPECT(strata_comm_free(&comm), STRATA_OK, "strata_comm_free", "");
  for (i = 0, bad = 0; i < N; ++i) bad += values[i] != (int32_t)i;
  CHECK(bad == 0);
  EXPECT(strata_request_wait(started), STRATA_OK, "strata_request_wait", "");
  EXPECT(strata_request_start(bound), STRATA_ERR_INVALID_ARGUMENT, "strata_request_start", "no longer exists");
  EXPECT(strata_request_free(&started), STRATA_OK, "strata_request_free", "");
  EXPECT(strata_request_free(&bound), STRATA_OK, "strata_request_free", "");
}

/* With the progress thread, a one-node shared-memory all_reduce completes
 * while this rank never calls test or wait (its output is polled, bounded
 * at 30 s); then wait gives OK. */
void test_progress_thread(strata_comm* comm) {
  enum { P = 32768 }; /* 128 KiB: the thread takes requests from 64 KiB */
  static float in[P];
  static volatile float out[P];
  strata_request* req = NULL;
  size_t i;
  int r, done = 0;
  double give_up;
  float expected_last = 0.0f;
  capi_step("progress thread");
  for (i = 0; i < P; ++i) in[i] = (float)(g_rank + 1) * (float)(i % 5 + 1), out[i] = -1.0f;
  for (r = 0; r < g_size; ++r) expected_last += (float)(r + 1) * (float)((P - 1) % 5 + 1);
  EXPECT(strata_iall_reduce(comm, in, (void*)out, P, STRATA_F32, STRATA_SUM, NULL, &req), STRATA_OK,
         "strata_iall_reduce", "");
  give_up = MPI_Wtime() + 30.0;
  while (!done && MPI_Wtime() < give_up) done = out[P - 1] == expected_last;
  CHECK(done); /* the progress thread ran it */
  EXPECT(strata_request_wait(req), STRATA_OK, "strata_request_wait", "");
  EXPECT(strata_request_free(&req), STRATA_OK, "strata_request_free", "");
}

