/* What a cross-memory read of lines the other rank just wrote costs, and
 * what the writer can do about it (the second half of a 2-rank owners
 * all-reduce reads exactly such lines: the peer's finished slice).
 *
 *   mpicc -O2 -march=native scripts/profile/fresh_lines.c -o /tmp/fresh_lines
 *   mpirun -np 2 /tmp/fresh_lines
 *
 * For 128 KiB, 512 KiB and 1 MiB, 60 rounds each between barriers, the
 * median in us of rank 0's process_vm_readv of rank 1's buffer when rank 1
 *   untouched: left it alone since the last round;
 *   fresh:     wrote it just before (its lines modified in rank 1's cache);
 *   cldemote:  wrote it, then CLDEMOTE on every line (a hint to move the
 *              line to the shared cache; a no-op where the CPU lacks it);
 * and rank 0's process_vm_writev of a buffer it just wrote into rank 1's
 * freshly written one ("push"). Then what the writer pays: one rank alone
 * writing the buffer with and without the CLDEMOTE pass. Exits 1 where the
 * kernel refuses the transfers, 2 at a rank count other than 2. */
#define _GNU_SOURCE
#include <immintrin.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/uio.h>
#include <unistd.h>

#include "sample.h"

enum { kRounds = 60 };
enum Mode { kUntouched, kFresh, kDemoted, kPush, kModes };
static const char* const kNames[kModes] = {"read, untouched", "read, fresh", "read, fresh + cldemote",
                                           "write into fresh"};

static void demote(char* p, size_t bytes) {
#ifdef __CLDEMOTE__
  for (size_t o = 0; o < bytes; o += 64) _cldemote(p + o);
#else
  (void)p;
  (void)bytes;
#endif
}

/* One transfer of `bytes` between `local` and `remote` in process `pid`:
 * its time in ns, or -1 (after perror) when the kernel refused it. */
static double transfer(int write, pid_t pid, void* local, void* remote, size_t bytes) {
  struct iovec l = {local, bytes}, r = {remote, bytes};
  const double start = now_ns();
  const ssize_t got = write ? process_vm_writev(pid, &l, 1, &r, 1, 0) : process_vm_readv(pid, &l, 1, &r, 1, 0);
  const double took = now_ns() - start;
  if (got == (ssize_t)bytes) return took;
  perror("fresh_lines: process_vm_readv/writev");
  return -1;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != 2) {
    if (rank == 0) fprintf(stderr, "fresh_lines: run it with 2 ranks\n");
    MPI_Finalize();
    return 2;
  }
#ifdef PR_SET_PTRACER
  prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
#endif
  const size_t most = 1 << 20, sizes[] = {128 << 10, 512 << 10, 1 << 20};
  char* mine = aligned_alloc(4096, most);
  char* local = aligned_alloc(4096, most);
  memset(mine, 1, most);
  memset(local, 2, most);
  long long me[2] = {getpid(), (long long)(size_t)mine}, peer[2];
  MPI_Sendrecv(me, 2, MPI_LONG_LONG, 1 - rank, 0, peer, 2, MPI_LONG_LONG, 1 - rank, 0, MPI_COMM_WORLD,
               MPI_STATUS_IGNORE);
  int failed = 0;
  for (size_t s = 0; s < sizeof sizes / sizeof *sizes && !failed; ++s) {
    const size_t bytes = sizes[s];
    for (int mode = 0; mode < kModes && !failed; ++mode) {
      double t[kRounds];
      for (int i = 0; i < kRounds && !failed; ++i) {
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 1 && mode != kUntouched) memset(mine, i, bytes);
        if (rank == 1 && mode == kDemoted) demote(mine, bytes);
        if (rank == 0) memset(local, i + 3, bytes); /* the reader's lines are its own, as an output's are */
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0) failed = (t[i] = transfer(mode == kPush, (pid_t)peer[0], local, (void*)(size_t)peer[1], bytes)) < 0;
        MPI_Bcast(&failed, 1, MPI_INT, 0, MPI_COMM_WORLD);
      }
      if (rank == 0 && !failed) {
        qsort(t, kRounds, sizeof *t, ascending);
        printf("%8zu B  %-24s median %7.1f us  %5.1f GB/s\n", bytes, kNames[mode], t[kRounds / 2] / 1e3,
               bytes / t[kRounds / 2]);
      }
    }
    if (rank == 0 && !failed) {
      double plain[kRounds], demoted[kRounds];
      for (int i = 0; i < kRounds; ++i) {
        double start = now_ns();
        memset(local, i, bytes);
        plain[i] = now_ns() - start;
        start = now_ns();
        memset(local, i + 1, bytes);
        demote(local, bytes);
        demoted[i] = now_ns() - start;
      }
      qsort(plain, kRounds, sizeof *plain, ascending);
      qsort(demoted, kRounds, sizeof *demoted, ascending);
      printf("%8zu B  the writer alone: write %.1f us, write + cldemote %.1f us\n", bytes, plain[kRounds / 2] / 1e3,
             demoted[kRounds / 2] / 1e3);
    }
  }
  MPI_Bcast(&failed, 1, MPI_INT, 0, MPI_COMM_WORLD);
  free(mine);
  free(local);
  MPI_Finalize();
  return failed;
}
