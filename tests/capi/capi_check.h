/* The checks the C API test programs share (test_c_api and
 * test_c_api_cuda): counted per rank, each failure printed with the rank,
 * the step and the line; a watchdog that ends a hung run; and the summary
 * over every rank that decides the exit status. Strict C99. */
#ifndef STRATA_TESTS_CAPI_CHECK_H
#define STRATA_TESTS_CAPI_CHECK_H

#include <strata/strata.h>

extern int g_rank, g_size;
/* The step running now: named in every failure and by the watchdog. */
extern const char* volatile g_step;

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

/* MPI_Init, g_rank and g_size; then a watchdog: after
 * STRATA_TEST_WATCHDOG_S seconds (default_seconds when unset) the process
 * exits 3 naming the step it hung in. `program` prefixes every line printed. */
void capi_start(int* argc, char*** argv, const char* program, unsigned default_seconds);

/* Sums the checks and failures over every rank, prints the summary on rank
 * 0 ("<program>: N checks passed on R ranks", or how many FAILED), calls
 * MPI_Finalize and returns the exit status: 0 when every check on every
 * rank passed, 1 otherwise. */
int capi_finish(void);

#endif
