/* The C API's names and structs: the version, every status name, the
 * option structs' defaults, and a communicator configured for exact
 * reproducible sums. */
#include "capi_check.h"
#include "capi_topics.h"

#include <mpi.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

void test_version_and_names(void) {
  int major = -1, minor = -1, patch = -1;
  char text[64];
  capi_step("version and names");
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
void test_option_defaults(void) {
  const strata_options macro = STRATA_OPTIONS_INIT;
  strata_options function;
  capi_step("option defaults");
  memset(&function, 0x5A, sizeof function);
  strata_options_init(&function);
  strata_options_init(NULL);
  CHECK(macro.stream == NULL);
  CHECK(function.stream == NULL);
  CHECK(function.bytes_per_pack == 0 && function.timeout_seconds == 0.0);
  CHECK(function.implementation == STRATA_IMPL_AUTO && function.memory == STRATA_MEMORY_HOST && function.device == -1);
}


/* Reproducible mode exact: rank r holds 2^-r... in rotated places; every
 * element's sum is the same exact value whichever rank holds which. */
void test_reproducible_exact(void) {
  strata_config config;
  strata_comm* exact = NULL;
  capi_step("create with reproducible = exact");
  strata_config_init(&config);
  CHECK(config.reproducible == NULL && config.accumulate_f32 == 0);
  config.reproducible = "exact";
  EXPECT(strata_comm_create(MPI_COMM_WORLD, &config, &exact), STRATA_OK, "strata_comm_create", "");
  if (exact != NULL) {
    float x[4];
    for (int i = 0; i < 4; ++i) x[i] = ldexpf(1.0f, -((i + g_rank) % 4) * 10); /* 1, 2^-10, 2^-20, 2^-30 rotated */
    EXPECT(strata_all_reduce(exact, x, x, 4, STRATA_F32, STRATA_SUM, NULL), STRATA_OK, "strata_all_reduce", "");
    for (int i = 0; i < 4; ++i) {
      double want = 0;
      for (int r = 0; r < g_size; ++r) want += ldexp(1.0, -((i + r) % 4) * 10);
      CHECK(x[i] == (float)want);
    }
  }
  EXPECT(strata_comm_free(&exact), STRATA_OK, "strata_comm_free", "");
}
