/* The topics of the C API test program (test_c_api.c runs them in order):
 * each checks its calls against values computed here from known inputs,
 * through capi_check.h. A NULL `options` is the calls' defaults. */
#ifndef STRATA_TESTS_CAPI_TOPICS_H
#define STRATA_TESTS_CAPI_TOPICS_H

#include <strata/strata.h>

#include <stddef.h>
#include <stdint.h>

enum { N = 1000, BIG = 1 << 17 };

/* Rank r's input element j of a blockwise call: distinct for every j and
 * rank, so that a wrong block, offset or count cannot give the expected
 * values; multiples of 0.25 below 2^17, so every f32 sum over up to 8 ranks
 * is exact in any order. */
static inline float f32_input(int rank, size_t j) { return (float)(0.25 * (double)j + 0.5 * (rank + 1)); }
static inline int32_t i32_input(int rank, size_t j) {
  return (int32_t)((rank * 7919 + (long)j * 104729) % 2001) - 1000;
}

/* capi_config.c: versions, status names, option and config structs. */
void test_version_and_names(void);
void test_option_defaults(void);
void test_reproducible_exact(void);

/* capi_collectives.c: every blocking collective. */
void test_all_reduce(strata_comm* comm, size_t count, const strata_options* options);
void test_reduce(strata_comm* comm);
void test_broadcast(strata_comm* comm);
void test_reduce_scatter(strata_comm* comm, size_t count, const strata_options* options);
void test_all_gather(strata_comm* comm, size_t count, const strata_options* options);

/* capi_batch.c: the batched all-reduce. */
void test_batch(strata_comm* comm, const strata_packing* packing, const strata_options* options);

/* capi_errors.c: the error boundary of the blocking calls and the communicator. */
void test_check(strata_comm* comm);
void test_invalid_arguments(strata_comm* comm);
void test_mismatch(strata_comm* comm);
void test_cuda_memory(strata_comm* comm);
void test_deadline(void);

/* capi_requests.c: non-blocking and persistent calls. */
void test_nonblocking(strata_comm* comm, size_t count, const strata_options* options);
void test_persistent(strata_comm* comm, const strata_options* options);
void test_progress_thread(strata_comm* comm);
void test_request_after_comm_free(void);

/* capi_request_errors.c: the errors requests report, and freeing active ones. */
void test_request_errors(strata_comm* comm);

#endif
