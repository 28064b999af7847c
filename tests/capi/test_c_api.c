/* The C API end to end, at any rank count (registered at 1 and 4; the
 * install test runs it at 2 and 3): every collective against results
 * computed here from known inputs, the option structs (a stream defaults
 * to NULL, and host memory ignores one), strata_comm_check, and every
 * error path a test can trigger (bad arguments give
 * STRATA_ERR_INVALID_ARGUMENT on every rank with a message naming the
 * field; CUDA memory without a GPU gives STRATA_ERR_UNAVAILABLE on every
 * rank; a missing rank gives DEADLINE_EXCEEDED, then PEER_FAILURE from
 * strata_comm_check and the next call), and
 * the requests (non-blocking and persistent calls; with and without the
 * progress thread): every form against the same computed values, several
 * outstanding and waited out of order, persistent reruns on new data,
 * errors from test / wait / free, freeing an active request, requests
 * outliving their communicator.
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

/* The option structs' defaults, from the INIT macro and the _init function
 * alike: a stream that is NULL (a blocking call) among them. */
static void test_option_defaults(void) {
  const strata_options macro = STRATA_OPTIONS_INIT;
  strata_options function;
  g_step = "option defaults";
  memset(&function, 0x5A, sizeof function);
  strata_options_init(&function);
  strata_options_init(NULL);
  CHECK(macro.stream == NULL);
  CHECK(function.stream == NULL);
  CHECK(function.bytes_per_pack == 0 && function.timeout_seconds == 0.0);
  CHECK(function.implementation == STRATA_IMPL_AUTO && function.memory == STRATA_MEMORY_HOST && function.device == -1);
}

/* strata_comm_check on a usable communicator: STRATA_OK, and the last
 * error left alone; a NULL handle is refused naming it. The flight record
 * without STRATA_FLIGHT_DIR (unset in the tests' environment): refused,
 * saying to set it, the path buffer left alone. */
static void test_check(strata_comm* comm) {
  char saved[512];
  char path[64] = "untouched";
  g_step = "check";
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

/* ---- requests ---- */

/* Every non-blocking call outstanding at once (f32 sum out of place, i64
 * sum to the last rank, f64 broadcast from rank 1, f32 reduce_scatter sum,
 * f64 all_gather, a batch of three dtypes in place), waited in reverse
 * order (one by a test loop), each checked against values computed here
 * from inputs that differ per call, rank and block, so a request that ran
 * on another call's buffer fails. Then every handle is freed. */
static void test_nonblocking(strata_comm* comm, size_t count, const strata_options* options) {
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
  g_step = "non-blocking";
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
static void test_persistent(strata_comm* comm, const strata_options* options) {
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
  g_step = "persistent";
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

/* Freeing an active request completes it (its result is in the buffer) and
 * nothing is written into its buffers afterwards. */
static void test_free_active(strata_comm* comm) {
  float* in = malloc(BIG * sizeof *in);
  float* out = malloc(BIG * sizeof *out);
  strata_request* req = NULL;
  size_t i;
  int r, bad;
  g_step = "free an active request";
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
static void test_request_errors(strata_comm* comm) {
  float buf[N] = {0};
  size_t counts[1] = {N};
  strata_dtype dtypes[1] = {STRATA_F32};
  strata_request* req = (strata_request*)buf; /* must come back NULL */
  int flag = -1, broken = -1;
  const int last = g_size - 1;
  const strata_status bad = STRATA_ERR_INVALID_ARGUMENT;
  g_step = "request errors";
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

/* A request outlives its communicator: strata_comm_free completes it (the
 * result is there, wait gives OK), and a persistent one can no longer
 * start. */
static void test_request_after_comm_free(void) {
  strata_comm* comm = NULL;
  strata_request* started = NULL;
  strata_request* bound = NULL;
  int32_t values[N];
  size_t i;
  int bad;
  g_step = "request after strata_comm_free";
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
static void test_progress_thread(strata_comm* comm) {
  enum { P = 32768 }; /* 128 KiB: the thread takes requests from 64 KiB */
  static float in[P];
  static volatile float out[P];
  strata_request* req = NULL;
  size_t i;
  int r, done = 0;
  double give_up;
  float expected_last = 0.0f;
  g_step = "progress thread";
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

/* The last rank never calls; the others time out after 1 s with
 * DEADLINE_EXCEEDED, and then strata_comm_check and their next call get
 * PEER_FAILURE; the last rank's communicator still checks out fine. */
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

int main(int argc, char** argv) {
  strata_comm* comm = NULL;
  strata_comm* xring = NULL;
  strata_comm* threaded = NULL;
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
  test_option_defaults();

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
    test_nonblocking(comm, N, NULL);
    test_nonblocking(comm, 40009, NULL);
    test_nonblocking(xring, 7, &options);
    test_persistent(comm, NULL);
    test_persistent(xring, &options);
    test_request_errors(comm);
    test_check(comm);
    /* A stream on host memory is ignored: every call and request form
     * takes it and gives the same results. The value is no stream at all,
     * so a call that used it would fail. */
    strata_options_init(&options);
    options.stream = (void*)&g_failures;
    options.timeout_seconds = 30;
    test_all_reduce(comm, N, &options);
    test_reduce_scatter(comm, 41, &options);
    test_all_gather(comm, 41, &options);
    test_batch(comm, NULL, &options);
    test_nonblocking(comm, 41, &options);
    test_persistent(comm, &options);
    test_check(comm);
  }
  /* Reproducible mode exact: rank r holds 2^-r... in rotated places; every
   * element's sum is the same exact value whichever rank holds which. */
  g_step = "create with reproducible = exact";
  strata_config_init(&config);
  CHECK(config.reproducible == NULL && config.accumulate_f32 == 0);
  config.reproducible = "exact";
  {
    strata_comm* exact = NULL;
    int rank = 0, size = 1;
    EXPECT(strata_comm_create(MPI_COMM_WORLD, &config, &exact), STRATA_OK, "strata_comm_create", "");
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (exact != NULL) {
      float x[4];
      for (int i = 0; i < 4; ++i) x[i] = ldexpf(1.0f, -((i + rank) % 4) * 10); /* 1, 2^-10, 2^-20, 2^-30 rotated */
      EXPECT(strata_all_reduce(exact, x, x, 4, STRATA_F32, STRATA_SUM, NULL), STRATA_OK, "strata_all_reduce", "");
      for (int i = 0; i < 4; ++i) {
        double want = 0;
        for (int r = 0; r < size; ++r) want += ldexp(1.0, -((i + r) % 4) * 10);
        CHECK(x[i] == (float)want);
      }
    }
    EXPECT(strata_comm_free(&exact), STRATA_OK, "strata_comm_free", "");
  }
  /* The same requests with the progress thread on. */
  g_step = "create with progress_thread";
  strata_config_init(&config);
  CHECK(config.progress_thread == 0);
  config.progress_thread = 1;
  EXPECT(strata_comm_create(MPI_COMM_WORLD, &config, &threaded), STRATA_OK, "strata_comm_create", "");
  if (threaded != NULL) {
    test_progress_thread(threaded);
    test_nonblocking(threaded, N, NULL);
    test_nonblocking(threaded, 40009, NULL);
    test_persistent(threaded, NULL);
    test_request_errors(threaded);
  }
  EXPECT(strata_comm_free(&threaded), STRATA_OK, "strata_comm_free", "");
  test_request_after_comm_free();
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
