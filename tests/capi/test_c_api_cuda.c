/* The C API's stream (strata_options' stream) on CUDA memory, on the test
 * double in CI and on a GPU where one is lent: every call, given a stream,
 * must order its work after what the caller enqueued there before the
 * call, and the caller reads the result back through that same stream.
 * Before each call the producer holds its stream back (cudaLaunchHostFunc,
 * released only once the call was made) and only then uploads the input:
 * a call that ignored the stream (strata_c.cpp dropping
 * it, or strata ordering after another stream) reads the previous case's
 * input, or memory never written, and fails. The cases: every blocking
 * call (all_reduce, reduce, broadcast, reduce_scatter, all_gather, batch),
 * a non-blocking all_reduce and batch, a persistent all_reduce started on
 * new data twice, all on a non-blocking stream of the caller's (which no
 * default stream orders); all_reduce on cudaStreamLegacy ((void*)1) and on
 * cudaStreamPerThread ((void*)2); then strata_comm_check gives STRATA_OK.
 * Results are read only after the stream passed them, so the test holds
 * whether a call with a stream blocks or returns once its work is
 * enqueued. Out of place where the call allows it, so that a missing wait
 * fails at one rank too.
 *
 * Exits 77 without a CUDA device, 0 when every check on every rank passed,
 * 1 otherwise; the harness's watchdog (STRATA_TEST_WATCHDOG_S, default
 * 100 s per step) ends a hung run with exit 124, naming the step it hung
 * in (capi_check.h). Every rank
 * drives CUDA device 0 (registered with one device per process, as virtual
 * nodes). */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */

#include <cuda_runtime_api.h>
#include <mpi.h>
#include <strata/strata.h>

#include "capi_check.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

enum { COUNT = 1 << 14 }; /* elements of one rank's block */

#define CUDA_OK(call) cuda_ok_at((call), #call, __LINE__)
static void cuda_ok_at(cudaError_t got, const char* what, int line) {
  if (got == cudaSuccess) return;
  fprintf(stderr, "capi cuda test: rank %d: %s (line %d) failed: %s\n", g_rank, what, line, cudaGetErrorString(got));
  MPI_Abort(MPI_COMM_WORLD, 2);
}

/* The producer's unfinished work before its upload: the stream waits in
 * hold_back until the test has made its call (release_producer), so
 * strata's work is always queued behind a producer that has not finished
 * and must order after it. The wait is bounded (10 s), so a call that
 * itself waited for the stream could not deadlock the test; nothing
 * asserts a time. */
static pthread_mutex_t g_producer_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_producer_released = PTHREAD_COND_INITIALIZER;
static int g_producer_held;

static void CUDART_CB hold_back(void* unused) {
  struct timespec bound;
  (void)unused;
  clock_gettime(CLOCK_REALTIME, &bound);
  bound.tv_sec += 10;
  pthread_mutex_lock(&g_producer_lock);
  while (g_producer_held && pthread_cond_timedwait(&g_producer_released, &g_producer_lock, &bound) == 0) {
  }
  pthread_mutex_unlock(&g_producer_lock);
}

static void set_producer_held(int held) {
  pthread_mutex_lock(&g_producer_lock);
  g_producer_held = held;
  pthread_cond_broadcast(&g_producer_released);
  pthread_mutex_unlock(&g_producer_lock);
}

/* Lets the held producer finish: once the call under test was made. */
static void release_producer(void) { set_producer_held(0); }

/* Rank r's element j in case `round`: distinct per case, so that reading
 * an earlier case's input fails; multiples of 0.5 below 2^14, so every sum
 * over the ranks is exact in f32 in any order. */
static float input(int rank, size_t j, int round) {
  return (float)((rank + 1) * (round + 1)) + 0.5f * (float)(j % 13);
}

static float sum_over_ranks(size_t j, int round) {
  float sum = 0.0f;
  int r;
  for (r = 0; r < g_size; ++r) sum += input(r, j, round);
  return sum;
}

/* Pinned host staging (the double, like CUDA, wants pinned memory for
 * asynchronous copies) and the stream every case works on. */
static float *g_up, *g_down;
static cudaStream_t g_stream;

/* On g_stream: held until release_producer (or consume), then
 * device[0 .. count) = this rank's input of `round` (at element offset
 * `first` of the input sequence). */
static void produce(float* device, size_t count, size_t first, int round) {
  size_t j;
  for (j = 0; j < count; ++j) g_up[j] = input(g_rank, first + j, round);
  set_producer_held(1);
  CUDA_OK(cudaLaunchHostFunc(g_stream, hold_back, NULL));
  CUDA_OK(cudaMemcpyAsync(device, g_up, count * sizeof(float), cudaMemcpyHostToDevice, g_stream));
}

/* Fills device[0 .. count) with -1 through g_stream: what no call writes. */
static void poison(float* device, size_t count) {
  size_t j;
  CUDA_OK(cudaStreamSynchronize(g_stream)); /* g_up may still feed a queued upload */
  for (j = 0; j < count; ++j) g_up[j] = -1.0f;
  CUDA_OK(cudaMemcpyAsync(device, g_up, count * sizeof(float), cudaMemcpyHostToDevice, g_stream));
  CUDA_OK(cudaStreamSynchronize(g_stream));
}

/* device[0 .. count) read back through g_stream, after the stream passed
 * everything enqueued on it, into g_down. */
static const float* consume(const float* device, size_t count) {
  release_producer();
  CUDA_OK(cudaMemcpyAsync(g_down, device, count * sizeof(float), cudaMemcpyDeviceToHost, g_stream));
  CUDA_OK(cudaStreamSynchronize(g_stream));
  return g_down;
}

/* How many of the `count` results differ from want(first + j, round). */
static int wrong(const float* got, size_t count, size_t first, int round, float (*want)(size_t, int)) {
  size_t j;
  int bad = 0;
  for (j = 0; j < count; ++j) bad += got[j] != want(first + j, round);
  return bad;
}

static int g_root;
static float root_input(size_t j, int round) { return input(g_root, j, round); }

static void test_blocking_calls(strata_comm* comm, float* a, float* b, const strata_options* options) {
  const size_t whole = COUNT * (size_t)g_size, mine = COUNT * (size_t)g_rank;
  void* buffers[2];
  size_t counts[2] = {COUNT / 4, COUNT - COUNT / 4};
  strata_dtype dtypes[2] = {STRATA_F32, STRATA_F32};
  const float* got;
  size_t j;
  int bad, r;

  capi_step("all_reduce on a stream");
  poison(b, COUNT);
  produce(a, COUNT, 0, 1);
  EXPECT_OK(strata_all_reduce(comm, a, b, COUNT, STRATA_F32, STRATA_SUM, options));
  CHECK(wrong(consume(b, COUNT), COUNT, 0, 1, sum_over_ranks) == 0);

  capi_step("reduce on a stream");
  g_root = g_size - 1;
  poison(b, COUNT);
  produce(a, COUNT, 0, 2);
  EXPECT_OK(strata_reduce(comm, a, b, COUNT, STRATA_F32, STRATA_SUM, g_root, options));
  got = consume(b, COUNT);
  if (g_rank == g_root) {
    CHECK(wrong(got, COUNT, 0, 2, sum_over_ranks) == 0);
  } else {
    for (j = 0, bad = 0; j < COUNT; ++j) bad += got[j] != -1.0f;
    CHECK(bad == 0); /* not the root: out untouched */
  }

  capi_step("broadcast on a stream");
  g_root = 0;
  produce(a, COUNT, 0, 3); /* every rank's: the others' upload must not land over the result */
  EXPECT_OK(strata_broadcast(comm, a, COUNT, STRATA_F32, g_root, options));
  CHECK(wrong(consume(a, COUNT), COUNT, 0, 3, root_input) == 0);

  capi_step("reduce_scatter on a stream");
  poison(b, COUNT);
  produce(a, whole, 0, 4);
  EXPECT_OK(strata_reduce_scatter(comm, a, b, COUNT, STRATA_F32, STRATA_SUM, options));
  CHECK(wrong(consume(b, COUNT), COUNT, mine, 4, sum_over_ranks) == 0);

  capi_step("all_gather on a stream");
  poison(b, whole);
  produce(a, COUNT, 0, 5);
  EXPECT_OK(strata_all_gather(comm, a, b, COUNT, STRATA_F32, options));
  got = consume(b, whole);
  for (r = 0, bad = 0; r < g_size; ++r)
    for (j = 0; j < COUNT; ++j) bad += got[(size_t)r * COUNT + j] != input(r, j, 5);
  CHECK(bad == 0); /* block r is rank r's input */

  capi_step("batch_all_reduce on a stream");
  produce(a, COUNT, 0, 6);
  buffers[0] = a, buffers[1] = a + counts[0];
  EXPECT_OK(strata_batch_all_reduce(comm, buffers, counts, dtypes, 2, STRATA_SUM, NULL, options));
  CHECK(wrong(consume(a, COUNT), COUNT, 0, 6, sum_over_ranks) == 0);
}

static void test_requests(strata_comm* comm, float* a, float* b, const strata_options* options) {
  strata_request* req = NULL;
  void* buffers[2];
  size_t counts[2] = {COUNT / 2, COUNT / 2};
  strata_dtype dtypes[2] = {STRATA_F32, STRATA_F32};
  int round;

  capi_step("iall_reduce on a stream");
  poison(b, COUNT);
  produce(a, COUNT, 0, 7);
  EXPECT_OK(strata_iall_reduce(comm, a, b, COUNT, STRATA_F32, STRATA_SUM, options, &req));
  release_producer(); /* before the wait, which needs the stream past it */
  EXPECT_OK(strata_request_wait(req));
  EXPECT_OK(strata_request_free(&req));
  CHECK(wrong(consume(b, COUNT), COUNT, 0, 7, sum_over_ranks) == 0);

  capi_step("ibatch_all_reduce on a stream");
  produce(a, COUNT, 0, 8);
  buffers[0] = a, buffers[1] = a + counts[0];
  EXPECT_OK(strata_ibatch_all_reduce(comm, buffers, counts, dtypes, 2, STRATA_SUM, NULL, options, &req));
  release_producer(); /* before the wait, which needs the stream past it */
  EXPECT_OK(strata_request_wait(req));
  EXPECT_OK(strata_request_free(&req));
  CHECK(wrong(consume(a, COUNT), COUNT, 0, 8, sum_over_ranks) == 0);

  capi_step("all_reduce_init on a stream");
  EXPECT_OK(strata_all_reduce_init(comm, a, b, COUNT, STRATA_F32, STRATA_SUM, options, &req));
  for (round = 9; round < 11; ++round) {
    poison(b, COUNT);
    produce(a, COUNT, 0, round);
    EXPECT_OK(strata_request_start(req));
    release_producer(); /* before the wait, which needs the stream past it */
    EXPECT_OK(strata_request_wait(req));
    CHECK(wrong(consume(b, COUNT), COUNT, 0, round, sum_over_ranks) == 0);
  }
  EXPECT_OK(strata_request_free(&req));
}

/* all_reduce with the stream a default stream: the producer and the reader
 * work on `stream`, strata is given `handle` (cudaStreamLegacy or
 * cudaStreamPerThread, as cudaStream_t values). */
static void test_default_stream(strata_comm* comm, float* a, float* b, cudaStream_t stream, void* handle,
                                int round, const char* step) {
  strata_options options = STRATA_OPTIONS_INIT;
  cudaStream_t own = g_stream;
  options.memory = STRATA_MEMORY_CUDA;
  options.timeout_seconds = 60;
  options.stream = handle;
  poison(b, COUNT);
  capi_step(step);
  g_stream = stream;
  produce(a, COUNT, 0, round);
  EXPECT_OK(strata_all_reduce(comm, a, b, COUNT, STRATA_F32, STRATA_SUM, &options));
  CHECK(wrong(consume(b, COUNT), COUNT, 0, round, sum_over_ranks) == 0);
  g_stream = own;
}

int main(int argc, char** argv) {
  strata_comm* comm = NULL;
  strata_options options = STRATA_OPTIONS_INIT;
  float *a = NULL, *b = NULL;
  int devices = 0;
  const cudaError_t probe = cudaGetDeviceCount(&devices);

  if (probe != cudaSuccess || devices == 0) {
    printf("test_c_api_cuda: SKIP: no CUDA device (%s)\n",
           probe != cudaSuccess ? cudaGetErrorString(probe) : "cudaGetDeviceCount gave 0");
    return 77;
  }
  capi_start(&argc, &argv, "capi cuda test", 100);

  capi_step("setup");
  CUDA_OK(cudaSetDevice(0));
  CUDA_OK(cudaStreamCreateWithFlags(&g_stream, cudaStreamNonBlocking));
  CUDA_OK(cudaMalloc((void**)&a, COUNT * (size_t)g_size * sizeof(float)));
  CUDA_OK(cudaMalloc((void**)&b, COUNT * (size_t)g_size * sizeof(float)));
  CUDA_OK(cudaMallocHost((void**)&g_up, COUNT * (size_t)g_size * sizeof(float)));
  CUDA_OK(cudaMallocHost((void**)&g_down, COUNT * (size_t)g_size * sizeof(float)));
  EXPECT_OK(strata_comm_create(MPI_COMM_WORLD, NULL, &comm));

  if (comm != NULL) {
    options.memory = STRATA_MEMORY_CUDA;
    options.timeout_seconds = 60;
    options.stream = (void*)g_stream;
    test_blocking_calls(comm, a, b, &options);
    test_requests(comm, a, b, &options);
    test_default_stream(comm, a, b, cudaStreamLegacy, (void*)cudaStreamLegacy, 11,
                        "all_reduce on cudaStreamLegacy");
    test_default_stream(comm, a, b, cudaStreamPerThread, (void*)cudaStreamPerThread, 12,
                        "all_reduce on cudaStreamPerThread");
    capi_step("check");
    EXPECT_OK(strata_comm_check(comm));
  }

  capi_step("teardown");
  EXPECT_OK(strata_comm_free(&comm));
  CUDA_OK(cudaStreamSynchronize(g_stream));
  CUDA_OK(cudaStreamDestroy(g_stream));
  CUDA_OK(cudaFree(a));
  CUDA_OK(cudaFree(b));
  CUDA_OK(cudaFreeHost(g_up));
  CUDA_OK(cudaFreeHost(g_down));

  return capi_finish();
}
