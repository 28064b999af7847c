/* The MPI test harness's core for C and Fortran test programs (part of
 * mpi_harness_core, harness_core.hpp; tests/mpi/harness.f90 binds it for
 * Fortran): the program's one RankChecks (harness_checks.hpp) behind a C
 * face. Strict C99, so the C API's test programs stay strict C.
 *
 *   strata_test_start    after MPI_Init, once
 *   strata_test_case     as the program moves from case to case
 *   strata_test_check    per check
 *   strata_test_finish   (collective) or strata_test_finish_rank, before
 *                        MPI_Finalize: the exit status */
#ifndef STRATA_TESTS_MPI_HARNESS_C_H
#define STRATA_TESTS_MPI_HARNESS_C_H

#ifdef __cplusplus
extern "C" {
#endif

/* Arms the watchdog over "program '<program>'", bounded by
 * STRATA_TEST_WATCHDOG_S or `bound_seconds` where that is unset; a hang
 * prints "strata-test HANG: ..." and exits 124. */
void strata_test_start(const char* program, int bound_seconds);

/* Re-arms the watchdog for a full bound over "case '<name>' of <program>". */
void strata_test_case(const char* name);

/* Counts a check of this rank's; a failed one (`ok` zero) prints
 * "<program>: FAIL on rank R: <what>". Returns `ok != 0`. */
int strata_test_check(int ok, const char* what);

/* Collective over MPI_COMM_WORLD: strata_test_check on every rank, then 1
 * on every rank iff every rank's `ok` held. */
int strata_test_check_every_rank(int ok, const char* what);

/* Collective over MPI_COMM_WORLD: stops the watchdog and prints on rank 0
 *   strata-test SUCCESS|FAILURE: <program>: R ranks, N checks (all ranks), F failed...
 * Returns the exit status, the same on every rank: 0 iff no rank failed. */
int strata_test_finish(void);

/* This rank alone, without MPI (for programs whose every MPI call is under
 * test): stops the watchdog, prints "<program>: rank R: P of N checks
 * passed", returns 0 iff this rank failed none. */
int strata_test_finish_rank(void);

#ifdef __cplusplus
}
#endif

#endif
