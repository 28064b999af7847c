/* The C API end to end, at any rank count (registered at 1 and 4; the
 * install test runs it at 2 and 3): the topics of capi_topics.h, one file
 * each, run here in order on a default communicator, one configured for
 * xring, and one with the progress thread: every collective and request
 * form against results computed from known inputs, the option and config
 * structs (a stream defaults to NULL, and host memory ignores one),
 * strata_comm_check, and every error path a test can trigger.
 *
 * Strict C99 (built with -std=c99 -pedantic -Werror): it is also the proof
 * that strata.h is plain C. Exits 0 when every check on every rank passed,
 * 1 otherwise (each failure printed with its rank and line); a watchdog
 * (STRATA_TEST_WATCHDOG_S, default 60 s) ends a hung run with exit 3 and
 * the step it hung in (capi_check.h). */
#include "capi_check.h"
#include "capi_topics.h"

#include <mpi.h>

#include <stddef.h>

/* The request forms every request-capable communicator runs: non-blocking
 * at a small and a large count, and persistent, with the defaults. */
static void test_request_forms(strata_comm* comm) {
  test_nonblocking(comm, N, NULL);
  test_nonblocking(comm, 40009, NULL);
  test_persistent(comm, NULL);
}

int main(int argc, char** argv) {
  strata_comm* comm = NULL;
  strata_comm* xring = NULL;
  strata_comm* threaded = NULL;
  strata_config config = STRATA_CONFIG_INIT;
  strata_options options = STRATA_OPTIONS_INIT;
  strata_packing packing = STRATA_PACKING_INIT;
  static int not_a_stream;
  int value = -1;

  capi_start(&argc, &argv, "capi test", 60);
  test_version_and_names();
  test_option_defaults();

  capi_step("create");
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
    test_request_forms(comm);
    test_nonblocking(xring, 7, &options);
    test_persistent(xring, &options);
    test_request_errors(comm);
    test_check(comm);
    /* A stream on host memory is ignored: every call and request form
     * takes it and gives the same results. The value is no stream at all,
     * so a call that used it would fail. */
    strata_options_init(&options);
    options.stream = &not_a_stream;
    options.timeout_seconds = 30;
    test_all_reduce(comm, N, &options);
    test_reduce_scatter(comm, 41, &options);
    test_all_gather(comm, 41, &options);
    test_batch(comm, NULL, &options);
    test_nonblocking(comm, 41, &options);
    test_persistent(comm, &options);
    test_check(comm);
  }
  test_reproducible_exact();
  /* The same requests with the progress thread on. */
  capi_step("create with progress_thread");
  strata_config_init(&config);
  CHECK(config.progress_thread == 0);
  config.progress_thread = 1;
  EXPECT(strata_comm_create(MPI_COMM_WORLD, &config, &threaded), STRATA_OK, "strata_comm_create", "");
  if (threaded != NULL) {
    test_progress_thread(threaded);
    test_request_forms(threaded);
    test_request_errors(threaded);
  }
  EXPECT(strata_comm_free(&threaded), STRATA_OK, "strata_comm_free", "");
  test_request_after_comm_free();
  capi_step("free");
  EXPECT(strata_comm_free(&comm), STRATA_OK, "strata_comm_free", "");
  CHECK(comm == NULL);
  EXPECT(strata_comm_free(&comm), STRATA_OK, "strata_comm_free", ""); /* already NULL: no-op */
  EXPECT(strata_comm_free(NULL), STRATA_OK, "strata_comm_free", "");
  EXPECT(strata_comm_free(&xring), STRATA_OK, "strata_comm_free", "");
  if (g_size > 1) test_deadline();
  return capi_finish();
}
