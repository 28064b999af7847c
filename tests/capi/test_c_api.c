/* The C API end to end, at any rank count (registered at 2 and 3): every
 * collective against results computed here from known inputs, the option
 * structs, and every error path a test can trigger (bad arguments give
 * STRATA_ERR_INVALID_ARGUMENT on every rank with a message naming the
 * field; CUDA memory without a GPU gives STRATA_ERR_UNAVAILABLE on every
 * rank; a missing rank gives DEADLINE_EXCEEDED, then PEER_FAILURE).
 *
 * Strict C99 (built with -std=c99 -pedantic -Werror): it is also the proof
 * that strata.h is plain C. Exits 0 when every check on every rank passed,
 * 1 otherwise (each failure printed with its rank and line); a watchdog
 * (STRATA_TEST_WATCHDOG_S, default 60 s) ends a hung run with exit 3 and
 * the step it hung in. */
#define _POSIX_C_SOURCE 200809L /* alarm, write */

#include <mpi.h>
#include <strata/strata.h>

#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int g_rank, g_size, g_checks, g_failures;
static const char* volatile g_step = "start";

#define CHECK(cond) check_at((cond), #cond, __LINE__)
static void check_at(int ok, const char* what, int line) {
  ++g_checks;
  if (ok) return;
  ++g_failures;
  fprintf(stderr, "capi test: rank %d: FAILED in %s (line %d): %s\n", g_rank, g_step, line, what);
}

/* `got` must be `want`; for an error, the last error must start with the
 * location ("strata [host:rank]: ") and then `function`, and mention
 * `needle`. */
#define EXPECT(got, want, function, needle) expect_at((got), (want), (function), (needle), __LINE__)
static void expect_at(strata_status got, strata_status want, const char* function, const char* needle, int line) {
  const char* message = strata_last_error();
  ++g_checks;
  if (got != want) {
    ++g_failures;
    fprintf(stderr, "capi test: rank %d: FAILED in %s (line %d): %s returned %s, expected %s; last error: %s\n",
            g_rank, g_step, line, function, strata_status_name(got), strata_status_name(want), message);
    return;
  }
  if (want == STRATA_OK) return;
  ++g_checks;
  const char* after = strncmp(message, "strata [", 8) == 0 ? strstr(message, "]: ") : NULL;
  if (after == NULL || strncmp(after + 3, function, strlen(function)) != 0 || strstr(message, needle) == NULL) {
    ++g_failures;
    fprintf(stderr, "capi test: rank %d: FAILED in %s (line %d): %s's message should start with the location, "
            "then its name, and mention '%s': %s\n", g_rank, g_step, line, function, needle, message);
  }
}

static void on_alarm(int signal_number) {
  static const char head[] = "capi test: watchdog: a rank is still in step '";
  static const char tail[] = "'; a collective hangs\n";
  (void)signal_number;
  if (write(2, head, sizeof head - 1) < 0 || write(2, (const char*)g_step, strlen((const char*)g_step)) < 0 ||
      write(2, tail, sizeof tail - 1) < 0) {
  }
  _exit(3);
}

enum { N = 1000, BIG = 1 << 17 };

static void test_version_and_names(void) {
  int major = -1, minor = -1, patch = -1;
  char text[64];
  g_step = "version and names";
  CHECK(strcmp(strata_last_error(), "") == 0); /* nothing has failed yet */
  strata_version(&major, &minor, &patch);
  strata_version(NULL, NULL, NULL);
  CHECK(major >= 0 && minor >= 0 && patch >= 0);
  snprintf(text, sizeof text, "%d.%d.%d", major, minor, patch);
  CHECK(strcmp(text, strata_version_string()) == 0);
  CHECK(strcmp(strata_status_name(STRATA_OK), "STRATA_OK") == 0);
  CHECK(strcmp(strata_status_name(STRATA_ERR_INVALID_ARGUMENT), "STRATA_ERR_INVALID_ARGUMENT") == 0);
  CHECK(strcmp(strata_status_name(STRATA_ERR_DEADLINE_EXCEEDED), "STRATA_ERR_DEADLINE_EXCEEDED") == 0);
  CHECK(strcmp(strata_status_name(STRATA_ERR_MISMATCH), "STRATA_ERR_MISMATCH") == 0);
  CHECK(strcmp(strata_status_name(STRATA_ERR_PEER_FAILURE), "STRATA_ERR_PEER_FAILURE") == 0);
  CHECK(strcmp(strata_status_name(STRATA_ERR_UNAVAILABLE), "STRATA_ERR_UNAVAILABLE") == 0);
  CHECK(strcmp(strata_status_name(STRATA_ERR_BACKEND), "STRATA_ERR_BACKEND") == 0);
  CHECK(strcmp(strata_status_name(STRATA_ERR_INTERNAL), "STRATA_ERR_INTERNAL") == 0);
  CHECK(strcmp(strata_status_name((strata_status)42), "STRATA_ERR_UNKNOWN") == 0);
}

/* f32 sum (out of place and in place), i32 max, and mean in i32 (truncating)
 * and f32, at `count` elements. Inputs are small multiples of 0.5, so every
 * f32 sum is exact in any order and the expected values are exact too. */
static void test_all_reduce(strata_comm* comm, size_t count, const strata_options* options) {
  float* in = malloc(count * sizeof *in);
  float* out = malloc(count * sizeof *out);
  int32_t* ints = malloc(count * sizeof *ints);
  size_t i;
  int r, bad;
  g_step = "all_reduce";
  for (i = 0; i < count; ++i) in[i] = (float)(0.5 * (g_rank + 1) + (double)(i % 17));
  EXPECT(strata_all_reduce(comm, in, out, count, STRATA_F32, STRATA_SUM, options), STRATA_OK, "strata_all_reduce", "");
  for (i = 0, bad = 0; i < count; ++i) {
    float expected = 0.0f;
    for (r = 0; r < g_size; ++r) expected += (float)(0.5 * (r + 1) + (double)(i % 17));
    bad += out[i] != expected || in[i] != (float)(0.5 * (g_rank + 1) + (double)(i % 17));
  }
  CHECK(bad == 0); /* f32 sum out of place; `in` unchanged */

  EXPECT(strata_all_reduce(comm, in, in, count, STRATA_F32, STRATA_MEAN, options), STRATA_OK, "strata_all_reduce", "");
  for (i = 0, bad = 0; i < count; ++i) bad += in[i] != out[i] / (float)g_size;
  CHECK(bad == 0); /* f32 mean in place = f32 sum / ranks */

  for (i = 0; i < count; ++i) ints[i] = (int32_t)((g_rank * 7919 + (long)i * 104729) % 2001) - 1000;
  EXPECT(strata_all_reduce(comm, ints, ints, count, STRATA_I32, STRATA_MAX, options), STRATA_OK, "strata_all_reduce", "");
  for (i = 0, bad = 0; i < count; ++i) {
    int32_t expected = INT32_MIN;
    for (r = 0; r < g_size; ++r) {
      const int32_t v = (int32_t)((r * 7919 + (long)i * 104729) % 2001) - 1000;
      if (v > expected) expected = v;
    }
    bad += ints[i] != expected;
  }
  CHECK(bad == 0); /* i32 max */

  for (i = 0; i < count; ++i) ints[i] = (int32_t)((g_rank * 3 - 4) * (int)(i % 5 + 1));
  EXPECT(strata_all_reduce(comm, ints, ints, count, STRATA_I32, STRATA_MEAN, options), STRATA_OK, "strata_all_reduce", "");
  for (i = 0, bad = 0; i < count; ++i) {
    int32_t sum = 0;
    for (r = 0; r < g_size; ++r) sum += (int32_t)((r * 3 - 4) * (int)(i % 5 + 1));
    bad += ints[i] != sum / g_size; /* C99 division truncates toward zero, as strata's mean does */
  }
  CHECK(bad == 0); /* i32 mean */
  free(in);
  free(out);
  free(ints);
}

/* i64 sum to the last rank (other ranks pass out = NULL), u32 min to rank 0
 * (other ranks pass a buffer that must stay untouched). */
static void test_reduce(strata_comm* comm) {
  int64_t in[N], out[N];
  uint32_t uin[N], uout[N];
  size_t i;
  int r, bad;
  const int last = g_size - 1;
  g_step = "reduce";
  for (i = 0; i < N; ++i) in[i] = (int64_t)g_rank * 1000000007LL + (int64_t)i;
  EXPECT(strata_reduce(comm, in, g_rank == last ? out : NULL, N, STRATA_I64, STRATA_SUM, last, NULL), STRATA_OK,
         "strata_reduce", "");
  if (g_rank == last) {
    for (i = 0, bad = 0; i < N; ++i) {
      int64_t expected = 0;
      for (r = 0; r < g_size; ++r) expected += (int64_t)r * 1000000007LL + (int64_t)i;
      bad += out[i] != expected;
    }
    CHECK(bad == 0); /* i64 sum at the root */
  }
  for (i = 0; i < N; ++i) uin[i] = (uint32_t)(((unsigned)g_rank * 2654435761u + (unsigned)i * 40503u) % 100000u);
  for (i = 0; i < N; ++i) uout[i] = 0xdeadbeefu;
  EXPECT(strata_reduce(comm, uin, uout, N, STRATA_U32, STRATA_MIN, 0, NULL), STRATA_OK, "strata_reduce", "");
  for (i = 0, bad = 0; i < N; ++i) {
    uint32_t expected = UINT32_MAX;
    for (r = 0; r < g_size; ++r) {
      const uint32_t v = (uint32_t)(((unsigned)r * 2654435761u + (unsigned)i * 40503u) % 100000u);
      if (v < expected) expected = v;
    }
    bad += uout[i] != (g_rank == 0 ? expected : 0xdeadbeefu);
  }
  CHECK(bad == 0); /* u32 min at rank 0; other ranks' out untouched */
}

/* f64 from rank 1 (rank 0 at one rank), u8 from the last rank. */
static void test_broadcast(strata_comm* comm) {
  double values[N];
  unsigned char bytes[N];
  size_t i;
  int bad;
  const int root = 1 % g_size, last = g_size - 1;
  g_step = "broadcast";
  for (i = 0; i < N; ++i) values[i] = g_rank == root ? 1.0 / (double)(i + 1) : -1.0;
  EXPECT(strata_broadcast(comm, values, N, STRATA_F64, root, NULL), STRATA_OK, "strata_broadcast", "");
  for (i = 0, bad = 0; i < N; ++i) bad += values[i] != 1.0 / (double)(i + 1);
  CHECK(bad == 0);
  for (i = 0; i < N; ++i) bytes[i] = (unsigned char)(g_rank == last ? i * 7 : 0);
  EXPECT(strata_broadcast(comm, bytes, N, STRATA_U8, last, NULL), STRATA_OK, "strata_broadcast", "");
  for (i = 0, bad = 0; i < N; ++i) bad += bytes[i] != (unsigned char)(i * 7);
  CHECK(bad == 0);
}

/* Rank r's input element j of a blockwise call: distinct for every j and
 * rank, so that a wrong block, offset or count cannot give the expected
 * values; multiples of 0.25 below 2^17, so every f32 sum over up to 8 ranks
 * is exact in any order. */
static float f32_input(int rank, size_t j) { return (float)(0.25 * (double)j + 0.5 * (rank + 1)); }
static int32_t i32_input(int rank, size_t j) { return (int32_t)((rank * 7919 + (long)j * 104729) % 2001) - 1000; }

/* reduce_scatter of `count` elements per rank, checked against this rank's
 * block of the reduction computed here: f32 sum out of place (`in` left
 * alone), i32 max in place (`out` = this rank's block of `in`; the other
 * blocks left alone) and i32 mean (truncating). count 0 with NULL buffers. */
static void test_reduce_scatter(strata_comm* comm, size_t count, const strata_options* options) {
  const size_t whole = count * (size_t)g_size, mine = count * (size_t)g_rank;
  float* in = malloc((whole + 1) * sizeof *in); /* + 1: never malloc(0) */
  float* out = malloc((count + 1) * sizeof *out);
  int32_t* ints = malloc((whole + 1) * sizeof *ints);
  int32_t* iout = malloc((count + 1) * sizeof *iout);
  size_t i, j;
  int r, bad;
  g_step = "reduce_scatter";
  for (j = 0; j < whole; ++j) in[j] = f32_input(g_rank, j);
  for (i = 0; i < count; ++i) out[i] = -1.0f;
  EXPECT(strata_reduce_scatter(comm, in, out, count, STRATA_F32, STRATA_SUM, options), STRATA_OK,
         "strata_reduce_scatter", "");
  for (i = 0, bad = 0; i < count; ++i) {
    float expected = 0.0f;
    for (r = 0; r < g_size; ++r) expected += f32_input(r, mine + i);
    bad += out[i] != expected;
  }
  for (j = 0; j < whole; ++j) bad += in[j] != f32_input(g_rank, j);
  CHECK(bad == 0); /* f32 sum out of place: this rank's block; `in` unchanged */

  for (j = 0; j < whole; ++j) ints[j] = i32_input(g_rank, j);
  EXPECT(strata_reduce_scatter(comm, ints, ints + mine, count, STRATA_I32, STRATA_MAX, options), STRATA_OK,
         "strata_reduce_scatter", "");
  for (j = 0, bad = 0; j < whole; ++j) {
    int32_t expected = i32_input(g_rank, j);
    if (j >= mine && j < mine + count)
      for (r = 0; r < g_size; ++r)
        if (i32_input(r, j) > expected) expected = i32_input(r, j);
    bad += ints[j] != expected;
  }
  CHECK(bad == 0); /* i32 max in place: this rank's block reduced, the other blocks untouched */

  for (j = 0; j < whole; ++j) ints[j] = (int32_t)((g_rank * 3 - 4) * (int)(j % 5 + 1)) - (int32_t)(j % 13);
  EXPECT(strata_reduce_scatter(comm, ints, iout, count, STRATA_I32, STRATA_MEAN, options), STRATA_OK,
         "strata_reduce_scatter", "");
  for (i = 0, bad = 0; i < count; ++i) {
    int32_t sum = 0;
    j = mine + i;
    for (r = 0; r < g_size; ++r) sum += (int32_t)((r * 3 - 4) * (int)(j % 5 + 1)) - (int32_t)(j % 13);
    bad += iout[i] != sum / g_size; /* C99 division truncates toward zero, as strata's mean does */
  }
  CHECK(bad == 0); /* i32 mean */

  EXPECT(strata_reduce_scatter(comm, NULL, NULL, 0, STRATA_F64, STRATA_PROD, options), STRATA_OK,
         "strata_reduce_scatter", ""); /* count 0 */
  free(in);
  free(out);
  free(ints);
  free(iout);
}

/* all_gather of `count` elements per rank, checked block by block against
 * every rank's input computed here: f64 out of place (`in` left alone),
 * u8 in place (`in` = this rank's block of `out`). count 0 with NULL
 * buffers. */
static void test_all_gather(strata_comm* comm, size_t count, const strata_options* options) {
  const size_t whole = count * (size_t)g_size, mine = count * (size_t)g_rank;
  double* in = malloc((count + 1) * sizeof *in);
  double* out = malloc((whole + 1) * sizeof *out);
  unsigned char* bytes = malloc(whole + 1);
  size_t i, j;
  int bad;
  g_step = "all_gather";
  for (i = 0; i < count; ++i) in[i] = g_rank * 1e6 + (double)i + 0.5;
  for (j = 0; j < whole; ++j) out[j] = -1.0;
  EXPECT(strata_all_gather(comm, in, out, count, STRATA_F64, options), STRATA_OK, "strata_all_gather", "");
  for (j = 0, bad = 0; j < whole; ++j) bad += out[j] != (double)(j / count) * 1e6 + (double)(j % count) + 0.5;
  for (i = 0; i < count; ++i) bad += in[i] != g_rank * 1e6 + (double)i + 0.5;
  CHECK(bad == 0); /* f64 out of place: block r is rank r's input; `in` unchanged */

  for (j = 0; j < whole; ++j)
    bytes[j] = j >= mine && j < mine + count ? (unsigned char)(g_rank * 31 + (int)(j - mine) * 7) : 0xAA;
  EXPECT(strata_all_gather(comm, bytes + mine, bytes, count, STRATA_U8, options), STRATA_OK, "strata_all_gather",
         "");
  for (j = 0, bad = 0; j < whole; ++j) bad += bytes[j] != (unsigned char)((int)(j / count) * 31 + (int)(j % count) * 7);
  CHECK(bad == 0); /* u8 in place */

  EXPECT(strata_all_gather(comm, NULL, NULL, 0, STRATA_I64, options), STRATA_OK, "strata_all_gather", "");
  free(in);
  free(out);
  free(bytes);
}

/* Four buffers of three dtypes (one empty, NULL), summed in place, with the
 * default packing and with explicit packing + options. */
static void test_batch(strata_comm* comm, const strata_packing* packing, const strata_options* options) {
  enum { A = 3000, B = 5, D = 300 };
  float a[A];
  int32_t b[B];
  uint64_t d[D];
  void* buffers[4];
  size_t counts[4] = {A, B, 0, D};
  strata_dtype dtypes[4] = {STRATA_F32, STRATA_I32, STRATA_F64, STRATA_U64};
  size_t i;
  int r, bad = 0;
  g_step = "batch_all_reduce";
  buffers[0] = a, buffers[1] = b, buffers[2] = NULL, buffers[3] = d;
  for (i = 0; i < A; ++i) a[i] = (float)(g_rank + 1) * 0.25f * (float)(i % 9);
  for (i = 0; i < B; ++i) b[i] = (int32_t)(g_rank - 2) * (int32_t)(i + 1);
  for (i = 0; i < D; ++i) d[i] = (uint64_t)g_rank << 33 | (uint64_t)i;
  EXPECT(strata_batch_all_reduce(comm, buffers, counts, dtypes, 4, STRATA_SUM, packing, options), STRATA_OK,
         "strata_batch_all_reduce", "");
  for (i = 0; i < A; ++i) {
    float expected = 0.0f;
    for (r = 0; r < g_size; ++r) expected += (float)(r + 1) * 0.25f * (float)(i % 9);
    bad += a[i] != expected;
  }
  for (i = 0; i < B; ++i) {
    int32_t expected = 0;
    for (r = 0; r < g_size; ++r) expected += (int32_t)(r - 2) * (int32_t)(i + 1);
    bad += b[i] != expected;
  }
  for (i = 0; i < D; ++i) {
    uint64_t expected = 0;
    for (r = 0; r < g_size; ++r) expected += (uint64_t)r << 33 | (uint64_t)i;
    bad += d[i] != expected;
  }
  CHECK(bad == 0);
  EXPECT(strata_batch_all_reduce(comm, NULL, NULL, NULL, 0, STRATA_SUM, packing, options), STRATA_OK,
         "strata_batch_all_reduce", ""); /* an empty batch */
}

/* Every invalid argument, passed by every rank: each must return
 * STRATA_ERR_INVALID_ARGUMENT with a message naming the field, and leave
 * the communicator usable. */
static void test_invalid_arguments(strata_comm* comm) {
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
  g_step = "invalid arguments";

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

  /* Successful calls leave the last error alone; the communicator still works. */
  snprintf(saved, sizeof saved, "%s", strata_last_error());
  EXPECT(strata_comm_broken(comm, &broken), STRATA_OK, "strata_comm_broken", "");
  CHECK(broken == 0);
  EXPECT(strata_all_reduce(comm, buf, buf, N, STRATA_F32, STRATA_SUM, NULL), STRATA_OK, "strata_all_reduce", "");
  CHECK(strcmp(saved, strata_last_error()) == 0);
}

/* CUDA memory, count 0 (no buffer is touched): with a usable GPU the call
 * succeeds; without one (this CI) every rank gets STRATA_ERR_UNAVAILABLE.
 * Either way all ranks agree and the communicator stays usable. */
/* Ranks that disagree on a call (the last rank passes one element more):
 * every rank gets STRATA_ERR_MISMATCH naming the count, and the
 * communicator still works. */
static void test_mismatch(strata_comm* comm) {
  float buf[N + 1] = {0};
  int size = 0;
  g_step = "mismatch";
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

static void test_cuda_memory(strata_comm* comm) {
  strata_options options = STRATA_OPTIONS_INIT;
  int status, lowest, highest, broken = -1;
  g_step = "cuda memory";
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
 * DEADLINE_EXCEEDED, and their next call gets PEER_FAILURE. */
static void test_deadline(void) {
  strata_comm* comm = NULL;
  strata_options options = STRATA_OPTIONS_INIT;
  float buf[N] = {0};
  int broken = -1;
  g_step = "deadline";
  EXPECT(strata_comm_create(MPI_COMM_WORLD, NULL, &comm), STRATA_OK, "strata_comm_create", "");
  if (g_rank != g_size - 1) {
    options.timeout_seconds = 1.0;
    EXPECT(strata_all_reduce(comm, buf, buf, N, STRATA_F32, STRATA_SUM, &options), STRATA_ERR_DEADLINE_EXCEEDED,
           "strata_all_reduce", "exceeded its timeout");
    EXPECT(strata_all_reduce(comm, buf, buf, N, STRATA_F32, STRATA_SUM, &options), STRATA_ERR_PEER_FAILURE,
           "strata_all_reduce", "broken");
  }
  EXPECT(strata_comm_broken(comm, &broken), STRATA_OK, "strata_comm_broken", "");
  CHECK(broken == (g_rank != g_size - 1));
  EXPECT(strata_comm_free(&comm), STRATA_OK, "strata_comm_free", "");
  CHECK(comm == NULL);
}

int main(int argc, char** argv) {
  strata_comm* comm = NULL;
  strata_comm* xring = NULL;
  strata_config config = STRATA_CONFIG_INIT;
  strata_options options = STRATA_OPTIONS_INIT;
  strata_packing packing = STRATA_PACKING_INIT;
  int value = -1, failures = 0, checks = 0;
  const char* watchdog = getenv("STRATA_TEST_WATCHDOG_S");

  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  signal(SIGALRM, on_alarm);
  alarm(watchdog ? (unsigned)atoi(watchdog) : 60u);

  test_version_and_names();

  g_step = "create";
  EXPECT(strata_comm_create(MPI_COMM_WORLD, NULL, &comm), STRATA_OK, "strata_comm_create", "");
  EXPECT(strata_comm_rank(comm, &value), STRATA_OK, "strata_comm_rank", "");
  CHECK(value == g_rank);
  EXPECT(strata_comm_size(comm, &value), STRATA_OK, "strata_comm_size", "");
  CHECK(value == g_size);
  config.all_reduce_spec = "xring";
  config.chunk_bytes = 4096;
  EXPECT(strata_comm_create_f(MPI_Comm_c2f(MPI_COMM_WORLD), &config, &xring), STRATA_OK, "strata_comm_create_f", "");

  if (comm != NULL && xring != NULL) {
    test_all_reduce(comm, N, NULL);
    test_all_reduce(comm, BIG, NULL);
    test_all_reduce(xring, BIG, NULL);
    options.implementation = STRATA_IMPL_RING;
    options.timeout_seconds = 30;
    test_all_reduce(comm, N, &options);
    test_reduce(comm);
    test_broadcast(comm);
    test_broadcast(xring);
    test_reduce_scatter(comm, N, NULL);
    test_reduce_scatter(comm, 40009, NULL);
    test_reduce_scatter(xring, 40009, &options);
    test_all_gather(comm, N, NULL);
    test_all_gather(comm, 40009, NULL);
    test_all_gather(xring, 40009, &options);
    test_batch(comm, NULL, NULL);
    packing.num_packs = 2;
    options.bytes_per_pack = 1024;
    test_batch(comm, &packing, &options);
    strata_packing_init(&packing);
    packing.agg_small_grads_max_bytes = 64;
    packing.agg_small_grads_max_group = 2;
    test_batch(xring, &packing, NULL);
    test_invalid_arguments(comm);
    test_mismatch(comm);
    test_cuda_memory(comm);
  }
  g_step = "free";
  EXPECT(strata_comm_free(&comm), STRATA_OK, "strata_comm_free", "");
  CHECK(comm == NULL);
  EXPECT(strata_comm_free(&comm), STRATA_OK, "strata_comm_free", ""); /* already NULL: no-op */
  EXPECT(strata_comm_free(NULL), STRATA_OK, "strata_comm_free", "");
  EXPECT(strata_comm_free(&xring), STRATA_OK, "strata_comm_free", "");
  if (g_size > 1) test_deadline();

  g_step = "summary";
  MPI_Allreduce(&g_failures, &failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Allreduce(&g_checks, &checks, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (g_rank == 0) {
    if (failures == 0)
      printf("capi test: %d checks passed on %d ranks\n", checks, g_size);
    else
      printf("capi test: %d of %d checks FAILED on %d ranks\n", failures, checks, g_size);
  }
  MPI_Finalize();
  return failures == 0 ? 0 : 1;
}
