/* How fast this machine's memcpy is when source and destination sit at
 * different offsets within a cache line (no MPI, one core):
 *
 *   cc -O2 scripts/profile/memcpy_offsets.c -o /tmp/memcpy_offsets
 *   /tmp/memcpy_offsets
 *
 * The source is page-aligned, the destination d bytes past a page
 * boundary; each cell is the best of many copies of that size, in GB/s.
 * On the AMD EPYC VM of 2026-11-28 (glibc 2.36) copies from 4 KiB up to
 * the L2 size ran at 2.2-3.0 GB/s for d = 1..31 and 30-86 GB/s otherwise
 * (glibc's `rep movsb` range): why lib/util/copy.hpp exists. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sample.h"


int main(void) {
  const size_t largest = 4u << 20;
  char* src = aligned_alloc(4096, largest + 8192);
  char* dst = aligned_alloc(4096, largest + 8192);
  if (!src || !dst) return 1;
  memset(src, 1, largest + 8192);
  memset(dst, 2, largest + 8192);
  const size_t sizes[] = {1024, 2048, 4096, 16384, 65536, 262144, 524288, 1u << 20, 4u << 20};
  const int offsets[] = {0, 1, 4, 8, 16, 31, 32, 33, 48, 63};
  printf("%9s", "bytes \\ d");
  for (size_t k = 0; k < sizeof offsets / sizeof *offsets; ++k) printf("%6d", offsets[k]);
  printf("   (GB/s)\n");
  for (size_t s = 0; s < sizeof sizes / sizeof *sizes; ++s) {
    const size_t n = sizes[s];
    printf("%9zu", n);
    for (size_t k = 0; k < sizeof offsets / sizeof *offsets; ++k) {
      double best = 1e300;
      const int copies = n < 65536 ? 2000 : 100;
      for (int i = 0; i < copies; ++i) {
        const double start = now_ns();
        memcpy(dst + offsets[k], src, n);
        __asm__ volatile("" : : "r"(dst) : "memory");
        const double took = now_ns() - start;
        if (took < best) best = took;
      }
      printf("%6.1f", n / best);
    }
    printf("\n");
  }
  free(src);
  free(dst);
  return 0;
}
