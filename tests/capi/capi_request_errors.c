/* The errors requests report (from the call, or later from test / wait /
 * free) and freeing a request that is still running. */
#include "capi_check.h"
#include "capi_topics.h"

#include <stdint.h>
#include <stdlib.h>

/* Freeing an active request completes it (its result is in the buffer) and
 * nothing is written into its buffers afterwards. */
static void test_free_active(strata_comm* comm) {
  float* in = malloc(BIG * sizeof *in);
  float* out = malloc(BIG * sizeof *out);
  strata_request* req = NULL;
  size_t i;
  int r, bad;
  capi_step("free an active request");
  for (i = 0; i < BIG; ++i) in[i] = (float)(0.5 * (g_rank + 1) + (double)(i % 23));
  EXPECT(strata_iall_reduce(comm, in, out, BIG, STRATA_F32, STRATA_SUM, NULL, &req), STRATA_OK, "strata_iall_reduce",
         "");
  EXPECT(strata_request_free(&req), STRATA_OK, "strata_request_free", "");
  CHECK(req == NULL);
  for (i = 0, bad = 0; i < BIG; ++i) {
    float expected = 0.0f;
    for (r = 0; r < g_size; ++r) expected += (float)(0.5 * (r + 1) + (double)(i % 23));
    bad += out[i] != expected;
  }
  CHECK(bad == 0); /* completed by free */
  for (i = 0; i < BIG; ++i) out[i] = -3.0f;
  EXPECT(strata_all_reduce(comm, in, in, BIG, STRATA_F32, STRATA_SUM, NULL), STRATA_OK, "strata_all_reduce", "");
  for (i = 0, bad = 0; i < BIG; ++i) bad += out[i] != -3.0f;
  CHECK(bad == 0); /* nothing written after free */
  EXPECT(strata_request_free(&req), STRATA_OK, "strata_request_free", ""); /* NULL: no-op */
  EXPECT(strata_request_free(NULL), STRATA_OK, "strata_request_free", "");
  free(in);
  free(out);
}

/* Errors: what no request can be made for fails at the call (req NULL);
 * everything else comes from test / wait / free: the last rank's invalid
 * root is INVALID_ARGUMENT there and MISMATCH on the others (once; the
 * request is then complete), and the communicator stays usable. */
void test_request_errors(strata_comm* comm) {
  float buf[N] = {0};
  size_t counts[1] = {N};
  strata_dtype dtypes[1] = {STRATA_F32};
  strata_request* req = (strata_request*)buf; /* must come back NULL */
  int flag = -1, broken = -1;
  const int last = g_size - 1;
  const strata_status bad = STRATA_ERR_INVALID_ARGUMENT;
  capi_step("request errors");
  EXPECT(strata_iall_reduce(NULL, buf, buf, N, STRATA_F32, STRATA_SUM, NULL, &req), bad, "strata_iall_reduce", "comm");
  CHECK(req == NULL);
  EXPECT(strata_iall_reduce(comm, buf, buf, N, STRATA_F32, STRATA_SUM, NULL, NULL), bad, "strata_iall_reduce", "req");
  req = (strata_request*)buf;
  EXPECT(strata_ireduce_scatter(comm, buf, buf + N - 4, SIZE_MAX / 2 + 1, STRATA_F32, STRATA_SUM, NULL, &req),
         g_size > 1 ? bad : STRATA_OK, "strata_ireduce_scatter", "recv_count");
  if (g_size > 1) CHECK(req == NULL);
  if (g_size == 1) { /* (one rank: no overflow; the C++ call refuses from wait) */
    EXPECT(strata_request_wait(req), bad, "strata_request_wait", "in.count");
    EXPECT(strata_request_free(&req), STRATA_OK, "strata_request_free", "");
  }
  req = (strata_request*)buf;
  EXPECT(strata_all_gather_init(comm, buf + N - 4, buf, SIZE_MAX / 2 + 1, STRATA_F32, NULL, &req),
         g_size > 1 ? bad : STRATA_OK, "strata_all_gather_init", "send_count");
  if (g_size > 1) CHECK(req == NULL);
  EXPECT(strata_request_free(&req), STRATA_OK, "strata_request_free", ""); /* (one rank: never started) */
  req = (strata_request*)buf;
  EXPECT(strata_ibatch_all_reduce(comm, NULL, counts, dtypes, 1, STRATA_SUM, NULL, NULL, &req), bad,
         "strata_ibatch_all_reduce", "buffers");
  CHECK(req == NULL);
  EXPECT(strata_request_wait(NULL), bad, "strata_request_wait", "req");
  EXPECT(strata_request_start(NULL), bad, "strata_request_start", "req");
  EXPECT(strata_request_test(NULL, &flag), bad, "strata_request_test", "req");

  /* Every rank passes the same invalid root: INVALID_ARGUMENT from wait on every rank. */
  EXPECT(strata_ibroadcast(comm, buf, N, STRATA_F32, g_size, NULL, &req), STRATA_OK, "strata_ibroadcast", "");
  EXPECT(strata_request_test(req, NULL), bad, "strata_request_test", "flag");
  EXPECT(strata_request_wait(req), bad, "strata_request_wait", "root");
  EXPECT(strata_request_wait(req), STRATA_OK, "strata_request_wait", ""); /* reported once */
  EXPECT(strata_request_free(&req), STRATA_OK, "strata_request_free", "");

  if (g_size > 1) {
    /* Only the last rank's root is invalid: there INVALID_ARGUMENT, MISMATCH elsewhere. */
    EXPECT(strata_ireduce(comm, buf, buf, N, STRATA_F32, STRATA_SUM, g_rank == last ? g_size : 0, NULL, &req),
           STRATA_OK, "strata_ireduce", "");
    if (g_rank == last)
      EXPECT(strata_request_wait(req), bad, "strata_request_wait", "root");
    else
      EXPECT(strata_request_wait(req), STRATA_ERR_MISMATCH, "strata_request_wait", "root");
    EXPECT(strata_request_free(&req), STRATA_OK, "strata_request_free", "");
    /* The same through test: flag 1 with the error, then 1 and OK. */
    EXPECT(strata_iall_reduce(comm, buf, buf, g_rank == last ? N - 1 : N, STRATA_F32, STRATA_SUM, NULL, &req),
           STRATA_OK, "strata_iall_reduce", "");
    do {
      flag = -1;
      const strata_status status = strata_request_test(req, &flag);
      if (status != STRATA_OK || flag) {
        EXPECT(status, STRATA_ERR_MISMATCH, "strata_request_test", "count");
        CHECK(flag == 1);
        break;
      }
    } while (1);
    EXPECT(strata_request_test(req, &flag), STRATA_OK, "strata_request_test", "");
    CHECK(flag == 1);
    EXPECT(strata_request_free(&req), STRATA_OK, "strata_request_free", "");
    /* Freeing an active request that fails returns its status. */
    EXPECT(strata_iall_gather(comm, buf, buf + 64, g_rank == last ? 8 : 4, STRATA_F32, NULL, &req), STRATA_OK,
           "strata_iall_gather", "");
    EXPECT(strata_request_free(&req), STRATA_ERR_MISMATCH, "strata_request_free", "count");
    CHECK(req == NULL);
  }
  EXPECT(strata_comm_broken(comm, &broken), STRATA_OK, "strata_comm_broken", "");
  CHECK(broken == 0);
  test_free_active(comm);
}

