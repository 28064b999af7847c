/* The shared checks of the C API test programs (capi_check.h). */
#include "capi_check.h"

#include <mpi.h>

#include <stdio.h>
#include <string.h>

#include "harness_c.h"

int g_rank, g_size;
static const char* g_step = "start";

/* Room for a failure's text; longer ones are cut, never overrun. */
enum { kLine = 1024 };

void capi_step(const char* name) {
  g_step = name;
  strata_test_case(name);
}

void capi_check_at(int ok, const char* what, int line) {
  char text[kLine];
  if (ok) {
    strata_test_check(1, "");
    return;
  }
  snprintf(text, sizeof text, "in %s (line %d): %s", g_step, line, what);
  strata_test_check(0, text);
}

void capi_expect_at(strata_status got, strata_status want, const char* function, const char* needle, int line) {
  const char* message = strata_last_error();
  const char* after;
  char text[kLine];
  if (got != want) {
    snprintf(text, sizeof text, "in %s (line %d): %s returned %s, expected %s; last error: %s", g_step, line, function,
             strata_status_name(got), strata_status_name(want), message);
    strata_test_check(0, text);
    return;
  }
  strata_test_check(1, "");
  if (want == STRATA_OK) return;
  after = strncmp(message, "strata [", 8) == 0 ? strstr(message, "]: ") : NULL;
  if (after == NULL || strncmp(after + 3, function, strlen(function)) != 0 || strstr(message, needle) == NULL) {
    snprintf(text, sizeof text,
             "in %s (line %d): %s's message should start with the location, then its name, and mention '%s': %s",
             g_step, line, function, needle, message);
    strata_test_check(0, text);
    return;
  }
  strata_test_check(1, "");
}

void capi_expect_ok_at(strata_status got, const char* what, int line) {
  char text[kLine];
  if (got == STRATA_OK) {
    strata_test_check(1, "");
    return;
  }
  snprintf(text, sizeof text, "in %s (line %d): %s returned %s: %s", g_step, line, what, strata_status_name(got),
           strata_last_error());
  strata_test_check(0, text);
}

void capi_start(int* argc, char*** argv, const char* program, int default_seconds) {
  MPI_Init(argc, argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  strata_test_start(program, default_seconds);
}

int capi_finish(void) {
  const int status = strata_test_finish();
  MPI_Finalize();
  return status;
}
