/* The peer yardstick's timer (scripts/peers.sh): one plain MPI program that
 * times one collective of MPI's C API over a list of sizes, built with each
 * MPI's own wrapper compiler, so that every MPI -- and strata, preloaded
 * into Debian's Open MPI through its interposer -- is measured as an
 * unchanged MPI program sees it.
 *
 *   timer COLLECTIVE SIZE... [-w WARMUP] [-n ITERS] [-t SECONDS]
 *
 * COLLECTIVE: allreduce (out of place), reduce (root 0), bcast (root 0),
 * allgather, reduce_scatter (MPI_Reduce_scatter_block); f32, sum. SIZE is
 * the whole vector in bytes (allgather: the output, reduce_scatter: the
 * input, as nccl-tests counts), rounded down to a multiple of 4 x ranks.
 * Per size, strata-bench's method (docs/BENCHMARKING.md, "Exactly what is
 * timed"): WARMUP untimed calls (default 5), then up to ITERS timed ones
 * (default 50), each after an MPI_Barrier; one MPI_Allreduce(MAX) over the
 * per-iteration times gives the slowest rank's, and the median of those is
 * reported. ITERS shrinks, to no fewer than 5, where the fastest warm-up
 * says the timed calls would take more than SECONDS (default 0.25): runs
 * stay short enough for the VM's placement to hold through one (peers.sh).
 * Then one fresh call, its output first filled with a sentinel, is checked
 * element by element on every rank that receives a result.
 *
 * Rank 0 prints "# library: ..." (MPI_Get_library_version's first line)
 * and one line "COLLECTIVE SIZE MEDIAN_US ITERS" per size on stdout.
 * Exit 0; 1 when a result was wrong (each such size named on stderr, every
 * size still run); 2 for bad usage.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MIN_ITERS = 5 };
static const float SENTINEL = -1.0f;

/* Small integers, so that every sum over ranks is exact in f32. */
static float value(int rank, size_t i) { return (float)((i * 7 + (size_t)rank * 3) % 16); }

static int compare(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

struct run {
  const char *name;
  int rank, ranks;
  size_t count; /* f32 elements of the whole vector */
  float *in, *out;
};

static void call(const struct run *r) {
  int block = (int)(r->count / (size_t)r->ranks);
  if (!strcmp(r->name, "allreduce"))
    MPI_Allreduce(r->in, r->out, (int)r->count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  else if (!strcmp(r->name, "reduce"))
    MPI_Reduce(r->in, r->out, (int)r->count, MPI_FLOAT, MPI_SUM, 0, MPI_COMM_WORLD);
  else if (!strcmp(r->name, "bcast"))
    MPI_Bcast(r->out, (int)r->count, MPI_FLOAT, 0, MPI_COMM_WORLD);
  else if (!strcmp(r->name, "allgather"))
    MPI_Allgather(r->in, block, MPI_FLOAT, r->out, block, MPI_FLOAT, MPI_COMM_WORLD);
  else
    MPI_Reduce_scatter_block(r->in, r->out, block, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
}

/* Fills the input (bcast: the root's buffer) and clears what receives. */
static void prepare(const struct run *r) {
  for (size_t i = 0; i < r->count; ++i) {
    r->in[i] = value(r->rank, i);
    r->out[i] = SENTINEL;
  }
  if (!strcmp(r->name, "bcast") && r->rank == 0)
    for (size_t i = 0; i < r->count; ++i) r->out[i] = value(0, i);
}

/* Wrong elements in this rank's result of the last call. */
static size_t wrong(const struct run *r) {
  size_t n = 0, block = r->count / (size_t)r->ranks;
  if (!strcmp(r->name, "reduce") && r->rank != 0) return 0;
  size_t len = !strcmp(r->name, "reduce_scatter") ? block : r->count;
  for (size_t i = 0; i < len; ++i) {
    float want = 0.0f;
    if (!strcmp(r->name, "bcast"))
      want = value(0, i);
    else if (!strcmp(r->name, "allgather"))
      want = value((int)(i / block), i % block);
    else if (!strcmp(r->name, "reduce_scatter"))
      for (int k = 0; k < r->ranks; ++k) want += value(k, (size_t)r->rank * block + i);
    else
      for (int k = 0; k < r->ranks; ++k) want += value(k, i);
    n += r->out[i] != want;
  }
  return n;
}

static int usage(int rank, const char *why) {
  if (rank == 0)
    fprintf(stderr, "timer: %s\nusage: timer allreduce|reduce|bcast|allgather|reduce_scatter SIZE... "
                    "[-w WARMUP] [-n ITERS] [-t SECONDS]\n", why);
  MPI_Finalize();
  return 2;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  struct run r = {0};
  MPI_Comm_rank(MPI_COMM_WORLD, &r.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &r.ranks);
  if (argc < 3) return usage(r.rank, "a collective and at least one size, please");
  r.name = argv[1];
  const char *known[] = {"allreduce", "reduce", "bcast", "allgather", "reduce_scatter"};
  int found = 0;
  for (size_t k = 0; k < sizeof known / sizeof *known; ++k) found |= !strcmp(r.name, known[k]);
  if (!found) return usage(r.rank, "unknown collective");
  int warmup = 5, iters = 50, nsizes = 0;
  double budget = 0.25;
  size_t *sizes = calloc((size_t)argc, sizeof *sizes), largest = 0;
  for (int a = 2; a < argc; ++a) {
    char *end = NULL;
    if (!strcmp(argv[a], "-w") && a + 1 < argc) warmup = atoi(argv[++a]);
    else if (!strcmp(argv[a], "-n") && a + 1 < argc) iters = atoi(argv[++a]);
    else if (!strcmp(argv[a], "-t") && a + 1 < argc) budget = atof(argv[++a]);
    else {
      unsigned long long s = strtoull(argv[a], &end, 10);
      if (*end || s < 4ull * (unsigned)r.ranks) return usage(r.rank, "a size is a byte count of at least 4 x ranks");
      sizes[nsizes] = (size_t)s / (4u * (unsigned)r.ranks) * (unsigned)r.ranks;
      if (sizes[nsizes] > largest) largest = sizes[nsizes];
      ++nsizes;
    }
  }
  if (warmup < 0 || iters < MIN_ITERS || !(budget > 0)) return usage(r.rank, "-w >= 0, -n >= 5, -t > 0");
  if (r.rank == 0) {
    char library[MPI_MAX_LIBRARY_VERSION_STRING];
    int len;
    MPI_Get_library_version(library, &len);
    library[strcspn(library, "\n")] = '\0';
    printf("# library: %s\n", library);
  }
  r.in = malloc(largest * sizeof(float));
  r.out = malloc(largest * sizeof(float));
  double *times = malloc((size_t)iters * sizeof *times);
  int failed = 0;
  for (int s = 0; s < nsizes; ++s) {
    r.count = sizes[s];
    prepare(&r);
    /* The fastest warm-up estimates a call: the first ones pay for setup. */
    double per_call = 0;
    for (int i = 0; i < warmup; ++i) {
      MPI_Barrier(MPI_COMM_WORLD);
      double t0 = MPI_Wtime();
      call(&r);
      double t = MPI_Wtime() - t0;
      per_call = i == 0 || t < per_call ? t : per_call;
    }
    /* Every rank the same count: the slowest rank's estimate decides. */
    MPI_Allreduce(MPI_IN_PLACE, &per_call, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    int n = iters;
    if (per_call * n > budget) n = per_call > 0 && budget / per_call > MIN_ITERS ? (int)(budget / per_call) : MIN_ITERS;
    for (int i = 0; i < n; ++i) {
      MPI_Barrier(MPI_COMM_WORLD);
      double t0 = MPI_Wtime();
      call(&r);
      times[i] = MPI_Wtime() - t0;
    }
    MPI_Allreduce(MPI_IN_PLACE, times, n, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    qsort(times, (size_t)n, sizeof *times, compare);
    double median = n % 2 ? times[n / 2] : (times[n / 2 - 1] + times[n / 2]) / 2;
    prepare(&r);
    call(&r);
    unsigned long long bad = wrong(&r);
    MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (r.rank == 0) {
      printf("%s %zu %.3f %d\n", r.name, r.count * sizeof(float), median * 1e6, n);
      fflush(stdout);
      if (bad) fprintf(stderr, "timer: WRONG: %s at %zu B: %llu wrong values\n", r.name, r.count * sizeof(float), bad);
    }
    failed |= bad != 0;
  }
  free(times);
  free(r.in);
  free(r.out);
  free(sizes);
  MPI_Finalize();
  return failed;
}
