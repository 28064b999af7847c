/* Every blocking collective of the C API against results computed here:
 * all_reduce, reduce, broadcast, reduce_scatter and all_gather, in several
 * dtypes and ops, in and out of place. */
#include "capi_check.h"
#include "capi_topics.h"

#include <stdlib.h>

/* f32 sum (out of place and in place), i32 max, and mean in i32 (truncating)
 * and f32, at `count` elements. Inputs are small multiples of 0.5, so every
 * f32 sum is exact in any order and the expected values are exact too. */
void test_all_reduce(strata_comm* comm, size_t count, const strata_options* options) {
  /* calloc: the compiler cannot see that `count` is never 0 here. */
  float* in = calloc(count, sizeof *in);
  float* out = calloc(count, sizeof *out);
  int32_t* ints = calloc(count, sizeof *ints);
  size_t i;
  int r, bad;
  capi_step("all_reduce");
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
void test_reduce(strata_comm* comm) {
  int64_t in[N], out[N];
  uint32_t uin[N], uout[N];
  size_t i;
  int r, bad;
  const int last = g_size - 1;
  capi_step("reduce");
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
void test_broadcast(strata_comm* comm) {
  double values[N];
  unsigned char bytes[N];
  size_t i;
  int bad;
  const int root = 1 % g_size, last = g_size - 1;
  capi_step("broadcast");
  for (i = 0; i < N; ++i) values[i] = g_rank == root ? 1.0 / (double)(i + 1) : -1.0;
  EXPECT(strata_broadcast(comm, values, N, STRATA_F64, root, NULL), STRATA_OK, "strata_broadcast", "");
  for (i = 0, bad = 0; i < N; ++i) bad += values[i] != 1.0 / (double)(i + 1);
  CHECK(bad == 0);
  for (i = 0; i < N; ++i) bytes[i] = (unsigned char)(g_rank == last ? i * 7 : 0);
  EXPECT(strata_broadcast(comm, bytes, N, STRATA_U8, last, NULL), STRATA_OK, "strata_broadcast", "");
  for (i = 0, bad = 0; i < N; ++i) bad += bytes[i] != (unsigned char)(i * 7);
  CHECK(bad == 0);
}

/* reduce_scatter of `count` elements per rank, checked against this rank's
 * block of the reduction computed here: f32 sum out of place (`in` left
 * alone), i32 max in place (`out` = this rank's block of `in`; the other
 * blocks left alone) and i32 mean (truncating). count 0 with NULL buffers. */
void test_reduce_scatter(strata_comm* comm, size_t count, const strata_options* options) {
  const size_t whole = count * (size_t)g_size, mine = count * (size_t)g_rank;
  float* in = malloc((whole + 1) * sizeof *in); /* + 1: never malloc(0) */
  float* out = malloc((count + 1) * sizeof *out);
  int32_t* ints = malloc((whole + 1) * sizeof *ints);
  int32_t* iout = malloc((count + 1) * sizeof *iout);
  size_t i, j;
  int r, bad;
  capi_step("reduce_scatter");
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
void test_all_gather(strata_comm* comm, size_t count, const strata_options* options) {
  const size_t whole = count * (size_t)g_size, mine = count * (size_t)g_rank;
  double* in = malloc((count + 1) * sizeof *in);
  double* out = malloc((whole + 1) * sizeof *out);
  unsigned char* bytes = malloc(whole + 1);
  size_t i, j;
  int bad;
  capi_step("all_gather");
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

