/* The shared checks of the C API test programs (capi_check.h). */
#define _POSIX_C_SOURCE 200809L /* alarm, write */

#include "capi_check.h"

#include <mpi.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int g_rank, g_size;
const char* volatile g_step = "start";
static int g_checks, g_failures;
static const char* g_program = "capi test";

void capi_check_at(int ok, const char* what, int line) {
  ++g_checks;
  if (ok) return;
  ++g_failures;
  fprintf(stderr, "%s: rank %d: FAILED in %s (line %d): %s\n", g_program, g_rank, g_step, line, what);
}

void capi_expect_at(strata_status got, strata_status want, const char* function, const char* needle, int line) {
  const char* message = strata_last_error();
  ++g_checks;
  if (got != want) {
    ++g_failures;
    fprintf(stderr, "%s: rank %d: FAILED in %s (line %d): %s returned %s, expected %s; last error: %s\n", g_program,
            g_rank, g_step, line, function, strata_status_name(got), strata_status_name(want), message);
    return;
  }
  if (want == STRATA_OK) return;
  ++g_checks;
  const char* after = strncmp(message, "strata [", 8) == 0 ? strstr(message, "]: ") : NULL;
  if (after == NULL || strncmp(after + 3, function, strlen(function)) != 0 || strstr(message, needle) == NULL) {
    ++g_failures;
    fprintf(stderr, "%s: rank %d: FAILED in %s (line %d): %s's message should start with the location, "
            "then its name, and mention '%s': %s\n", g_program, g_rank, g_step, line, function, needle, message);
  }
}

void capi_expect_ok_at(strata_status got, const char* what, int line) {
  ++g_checks;
  if (got == STRATA_OK) return;
  ++g_failures;
  fprintf(stderr, "%s: rank %d: FAILED in %s (line %d): %s returned %s: %s\n", g_program, g_rank, g_step, line, what,
          strata_status_name(got), strata_last_error());
}

/* Only async-signal-safe calls: write and _exit. */
static void on_alarm(int signal_number) {
  static const char head[] = ": watchdog: a rank is still in step '";
  static const char tail[] = "'; a collective hangs\n";
  (void)signal_number;
  if (write(2, g_program, strlen(g_program)) < 0 || write(2, head, sizeof head - 1) < 0 ||
      write(2, (const char*)g_step, strlen((const char*)g_step)) < 0 || write(2, tail, sizeof tail - 1) < 0) {
  }
  _exit(3);
}

void capi_start(int* argc, char*** argv, const char* program, unsigned default_seconds) {
  const char* watchdog = getenv("STRATA_TEST_WATCHDOG_S");
  g_program = program;
  MPI_Init(argc, argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  signal(SIGALRM, on_alarm);
  alarm(watchdog ? (unsigned)atoi(watchdog) : default_seconds);
}

int capi_finish(void) {
  int failures = 0, checks = 0;
  g_step = "summary";
  MPI_Allreduce(&g_failures, &failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Allreduce(&g_checks, &checks, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (g_rank == 0) {
    if (failures == 0)
      printf("%s: %d checks passed on %d ranks\n", g_program, checks, g_size);
    else
      printf("%s: %d of %d checks FAILED on %d ranks\n", g_program, failures, checks, g_size);
  }
  MPI_Finalize();
  return failures == 0 ? 0 : 1;
}
