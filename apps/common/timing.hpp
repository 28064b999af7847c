// What the apps time, in one place (docs/BENCHMARKING.md quotes this;
// strata-bench and strata-tune both time through it, so their figures mean
// the same thing):
//
// For each size: `warmup` untimed calls, then `iters` timed calls. Before
// each timed call all ranks meet in MPI_Barrier; each rank then reads
// MPI_Wtime, makes one blocking call, and reads MPI_Wtime again. The call's
// time is the maximum over ranks (one MPI_Allreduce MAX over the array of
// per-iteration times, after the loop, so it does not disturb the timing),
// and the reported time is the median over iterations. The maximum is what
// an application waits for; the median ignores the odd iteration that an
// OS hiccup stretched. Data initialisation and checking are not timed.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <functional>
#include <vector>

namespace bench {

struct Timing {
  double median_us = 0;
  double min_us = 0;  // fastest iteration (max over ranks), for the JSON
  double max_us = 0;  // slowest iteration (max over ranks), for the JSON
};

// Runs `call` warmup + iters times as described above; collective over comm.
Timing time_collective(MPI_Comm comm, int warmup, int iters, const std::function<void()>& call);

// The same for several calls taking turns: each warm-up round and each timed
// iteration runs every call once (a barrier before each timed one), in
// order on even iterations and in reverse order on odd ones, so that a
// drift of the machine's speed during the run, and going first, weigh on
// every call alike. One Timing per call, in order; collective over comm.
std::vector<Timing> time_alternating(MPI_Comm comm, int warmup, int iters,
                                     const std::vector<std::function<void()>>& calls);

// Single-core memcpy bandwidth in GB/s (1e9 bytes/s, bytes copied once)
// between two fresh buffers of `bytes`: the median of `iters` copies after
// one warm-up copy. Local to the calling rank.
double memcpy_gbps(std::size_t bytes, int iters);

}  // namespace bench
