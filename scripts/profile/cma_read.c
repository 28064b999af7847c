/* What a cross-memory read costs: process_vm_readv of another rank's memory.
 *
 *   mpicc -O2 scripts/profile/cma_read.c -o /tmp/cma_read
 *   build/strata-launch -n 2 /tmp/cma_read            # small reads
 *   build/strata-launch -n 2 /tmp/cma_read large      # 64 KiB-1 MiB, lines the peer left alone
 *   build/strata-launch -n 2 /tmp/cma_read fresh      # the same, the peer rewrites its buffer first
 *   build/strata-launch -n 2 /tmp/cma_read demote     # the same, then CLDEMOTEs it (build with -march=native)
 *   build/strata-launch -n 2 /tmp/cma_read push       # rank 0 writes into the peer's rewritten buffer
 *
 * Small: rank 0 reads 64 B, 4 KiB, 16 KiB and 64 KiB of rank 1's buffer,
 * 200 times each, and prints the median and the fastest read in ns; then
 * the median of 200 getppid() calls, the bare cost of a system call. strata
 * times the 4 KiB read the same way when a node's shared-memory segment is
 * made (lib/host/shm_direct_sizes.hpp) and starts its direct path lower
 * where reads are cheap.
 * large / fresh: 64 KiB to 1 MiB, 50 reads each between barriers, the
 * median in us and GB/s; with fresh, rank 1 writes its whole buffer before
 * each read (as a program does that computes what it sends, and as OSU's
 * -c does), so the read finds the lines modified in the other core's cache.
 * With demote, rank 1 then runs CLDEMOTE on every line (a hint to move it
 * to the shared cache; a no-op where the CPU or the build lacks it), and
 * rank 0 also prints what that costs a writer alone; with push, rank 0
 * writes (process_vm_writev) into rank 1's rewritten buffer instead of
 * reading it.
 * Exits 1 where the kernel refuses the read (Yama's ptrace_scope, a
 * container), 2 on a wrong rank count or argument. */
#define _GNU_SOURCE
#include <immintrin.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "sample.h"

enum { kReads = 200, kLargeReads = 50 };

/* One read of `bytes` at `remote` in process `pid` into `local` (with
 * `write`, a write of `local` there): its time in ns, or -1 (after perror)
 * when the kernel refused it or moved less. */
static double timed_transfer(int write, pid_t pid, const void* remote, void* local, size_t bytes) {
  struct iovec here = {local, bytes}, there = {(void*)remote, bytes};
  const double start = now_ns();
  const ssize_t got =
      write ? process_vm_writev(pid, &here, 1, &there, 1, 0) : process_vm_readv(pid, &here, 1, &there, 1, 0);
  const double took = now_ns() - start;
  if (got == (ssize_t)bytes) return took;
  perror("cma_read: process_vm_readv/writev");
  return -1;
}

static double timed_read(pid_t pid, const void* remote, void* local, size_t bytes) {
  return timed_transfer(0, pid, remote, local, bytes);
}

static void demote(char* p, size_t bytes) {
#ifdef __CLDEMOTE__
  for (size_t o = 0; o < bytes; o += 64) _cldemote(p + o);
#else
  (void)p;
  (void)bytes;
#endif
}

/* What a writer alone pays for its CLDEMOTE pass: medians of writing
 * `bytes` with and without it. */
static void print_demote_cost(char* buffer, size_t bytes) {
  double plain[kLargeReads], demoted[kLargeReads];
  for (int i = 0; i < kLargeReads; ++i) {
    double start = now_ns();
    memset(buffer, i, bytes);
    plain[i] = now_ns() - start;
    start = now_ns();
    memset(buffer, i + 1, bytes);
    demote(buffer, bytes);
    demoted[i] = now_ns() - start;
  }
  qsort(plain, kLargeReads, sizeof *plain, ascending);
  qsort(demoted, kLargeReads, sizeof *demoted, ascending);
  printf("  a writer alone: write %.1f us, write + cldemote %.1f us\n", plain[kLargeReads / 2] / 1e3,
         demoted[kLargeReads / 2] / 1e3);
}
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != 2) {
    if (rank == 0) fprintf(stderr, "cma_read: run it with 2 ranks\n");
    MPI_Finalize();
    return 2;
  }
#ifdef PR_SET_PTRACER
  prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0); /* under ptrace_scope 1, let the peer read us */
#endif
  const char* const mode = argc > 1 ? argv[1] : "";
  const int demoting = strcmp(mode, "demote") == 0, push = strcmp(mode, "push") == 0;
  const int fresh = strcmp(mode, "fresh") == 0 || demoting || push;
  const int large = strcmp(mode, "large") == 0 || fresh;
  if (argc > 1 && !large) {
    if (rank == 0) fprintf(stderr, "cma_read: the argument is large, fresh, demote or push, not %s\n", argv[1]);
    MPI_Finalize();
    return 2;
  }
  const size_t most = large ? 1024 * 1024 : 64 * 1024;
  char* mine = aligned_alloc(4096, most);
  char* into = aligned_alloc(4096, most);
  memset(mine, rank + 1, most);
  memset(into, 0, most);
  long long me[2] = {getpid(), (long long)(size_t)mine}, peer[2];
  MPI_Sendrecv(me, 2, MPI_LONG_LONG, 1 - rank, 0, peer, 2, MPI_LONG_LONG, 1 - rank, 0, MPI_COMM_WORLD,
               MPI_STATUS_IGNORE);
  int failed = 0;
  if (large) {
    const size_t sizes[] = {64 * 1024, 256 * 1024, 512 * 1024, 1024 * 1024};
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes && !failed; ++s) {
      double t[kLargeReads];
      for (int i = 0; i < kLargeReads; ++i) {
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 1 && fresh) memset(mine, i + 2, sizes[s]);
        if (rank == 1 && demoting) demote(mine, sizes[s]);
        if (rank == 0 && push) memset(into, i + 3, sizes[s]); /* what it pushes, hot in its own cache */
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0)
          failed = (t[i] = timed_transfer(push, (pid_t)peer[0], (void*)(size_t)peer[1], into, sizes[s])) < 0;
        MPI_Bcast(&failed, 1, MPI_INT, 0, MPI_COMM_WORLD);
        if (failed) break;
      }
      if (rank == 0 && !failed) {
        qsort(t, kLargeReads, sizeof *t, ascending);
        printf("%s of %7zu B (%s): median %6.1f us, %5.1f GB/s\n", push ? "write" : "read", sizes[s],
               demoting ? "fresh, demoted" : fresh ? "fresh" : "untouched", t[kLargeReads / 2] / 1e3,
               sizes[s] / t[kLargeReads / 2]);
        if (demoting) print_demote_cost(into, sizes[s]);
      }
    }
  } else if (rank == 0) {
    const size_t sizes[] = {64, 4096, 16384, 65536};
    double t[kReads];
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes && !failed; ++s) {
      for (int i = 0; i < kReads && !failed; ++i)
        failed = (t[i] = timed_read((pid_t)peer[0], (void*)(size_t)peer[1], into, sizes[s])) < 0;
      if (failed) break;
      qsort(t, kReads, sizeof *t, ascending);
      printf("read of %6zu B: median %5.0f ns, fastest %5.0f ns\n", sizes[s], t[kReads / 2], t[0]);
    }
    for (int i = 0; i < kReads; ++i) {
      const double start = now_ns();
      (void)getppid();
      t[i] = now_ns() - start;
    }
    qsort(t, kReads, sizeof *t, ascending);
    printf("getppid(): median %.0f ns\n", t[kReads / 2]);
  }
  MPI_Bcast(&failed, 1, MPI_INT, 0, MPI_COMM_WORLD); /* rank 1's buffer stays until rank 0 is done */
  free(mine);
  free(into);
  MPI_Finalize();
  return failed;
}
