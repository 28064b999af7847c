/* What the profiling programs here share for their samples: a monotonic
 * clock in ns (CLOCK_MONOTONIC, shared by the ranks of a node) and a
 * comparator for qsort, to take medians and minima. */
#ifndef STRATA_PROFILE_SAMPLE_H
#define STRATA_PROFILE_SAMPLE_H

#include <time.h>

static inline double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static inline int ascending(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

#endif
