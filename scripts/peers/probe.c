/* The peer yardstick's placement probe (scripts/peers.sh): how far apart
 * CPU 0 and CPU 1 sit right now. This VM moves its two vCPUs between
 * "near" (~100 ns per cache-line round trip) and "far" (~450 ns) every few
 * seconds, and every MPI's times depend on which, so peers.sh runs this
 * right before and right after each timed run and keeps the run only when
 * both agree.
 *
 *   probe [MILLISECONDS]      (default 50)
 *
 * Two threads, pinned to CPU 0 and CPU 1, hand one cache line back and
 * forth (a counter each increments in turn); for MILLISECONDS the pinger
 * times batches of round trips. Prints the median batch's round trip in
 * whole ns on stdout. Exit 1 when the threads cannot be pinned.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

enum { BATCH = 200, MAX_BATCHES = 100000 };

/* The line that travels, alone in its cache line. */
static _Alignas(64) _Atomic long line;
static _Atomic int stop;

static int pin(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* CPU 1: turns every odd value into the next even one. */
static void *pong(void *unused) {
  (void)unused;
  if (pin(1)) return (void *)1;
  while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
    long v = atomic_load_explicit(&line, memory_order_acquire);
    if (v & 1) atomic_store_explicit(&line, v + 1, memory_order_release);
  }
  return NULL;
}

static int compare(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  double seconds = (argc > 1 ? atof(argv[1]) : 50) * 1e-3;
  if (pin(0)) {
    fprintf(stderr, "probe: cannot pin a thread to CPU 0\n");
    return 1;
  }
  pthread_t thread;
  pthread_create(&thread, NULL, pong, NULL);
  double *batches = malloc(MAX_BATCHES * sizeof *batches);
  int n = 0;
  long v = 0;
  double end = now() + seconds;
  while (n < MAX_BATCHES && now() < end) {
    double t0 = now();
    for (int i = 0; i < BATCH; ++i) {
      atomic_store_explicit(&line, ++v, memory_order_release);
      while (atomic_load_explicit(&line, memory_order_acquire) == v) {}
      ++v;
    }
    batches[n++] = (now() - t0) / BATCH;
  }
  atomic_store(&stop, 1);
  void *failed;
  pthread_join(thread, &failed);
  if (failed || n == 0) {
    fprintf(stderr, "probe: cannot pin a thread to CPU 1\n");
    return 1;
  }
  qsort(batches, (size_t)n, sizeof *batches, compare);
  printf("%.0f\n", batches[n / 2] * 1e9);
  free(batches);
  return 0;
}
