/* The batched all-reduce of the C API, with its packing options. */
#include "capi_check.h"
#include "capi_topics.h"

/* Four buffers of three dtypes (one empty, NULL), summed in place, with the
 * default packing and with explicit packing + options. */
void test_batch(strata_comm* comm, const strata_packing* packing, const strata_options* options) {
  enum { A = 3000, B = 5, D = 300 };
  float a[A];
  int32_t b[B];
  uint64_t d[D];
  void* buffers[4];
  size_t counts[4] = {A, B, 0, D};
  strata_dtype dtypes[4] = {STRATA_F32, STRATA_I32, STRATA_F64, STRATA_U64};
  size_t i;
  int r, bad = 0;
  capi_step("batch_all_reduce");
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

