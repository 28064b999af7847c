/* The checks the C API test programs share (test_c_api and
 * test_c_api_cuda), on the MPI test harness's C face (tests/mpi/harness_c.h):
 * counted per rank, each failure printed with the rank, the step and the
 * line; the harness's watchdog, re-armed at each step; and the summary
 * over every rank that decides the exit status. Strict C99. */
#ifndef STRATA_TESTS_CAPI_CHECK_H
#define STRATA_TESTS_CAPI_CHECK_H

#include <strata/strata.h>

extern int g_rank, g_size;

/* Enters a step: named in every failure after it and, should it hang, by
 * the watchdog, which gets a full bound for it. */
void capi_step(const char* name);

/* Counts a check; a false `cond` is a failure, printed with its text. */
#define CHECK(cond) capi_check_at((cond), #cond, __LINE__)
void capi_check_at(int ok, const char* what, int line);

/* `got` must be `want`; for an error, the last error must start with the
 * location ("strata [host:rank]: ") and then `function`, and mention
 * `needle`. */
#define EXPECT(got, want, function, needle) capi_expect_at((got), (want), (function), (needle), __LINE__)
void capi_expect_at(strata_status got, strata_status want, const char* function, const char* needle, int line);

/* `call` must return STRATA_OK; a failure prints the call's text and the last error. */
#define EXPECT_OK(call) capi_expect_ok_at((call), #call, __LINE__)
void capi_expect_ok_at(strata_status got, const char* what, int line);

/* MPI_Init, g_rank and g_size; then the harness's checks for `program`
 * (strata_test_start): its watchdog ends a step that runs past
 * STRATA_TEST_WATCHDOG_S seconds (default_seconds when unset) with
 * "strata-test HANG: ..." and status 124. */
void capi_start(int* argc, char*** argv, const char* program, int default_seconds);

/* The harness's summary over every rank (on rank 0, "strata-test SUCCESS:
 * <program>: R ranks, N checks ..."), then MPI_Finalize; returns the exit
 * status: 0 when every check on every rank passed, 1 otherwise. */
int capi_finish(void);

#endif
