// --overlap: how much of a started call's time a computation running
// meanwhile hides, measured per size as OSU's osu_iallreduce does:
//   t_pure    the blocking call's median time;
//   t_compute a CPU-bound loop on registers, calibrated on each rank to take
//             about t_pure, timed alone (--overlap-compute sleep: a sleep of
//             t_pure, which leaves the core to the progress thread);
//   t_total   start the call, run the loop, wait;
//   overlap % = max(0, 100 x (1 - (t_total - t_compute) / t_pure)), at most
//             100: the share of the call that did not add to the
//             computation's time. 0 when the call only runs inside wait()
//             (no progress thread): then t_total = t_compute + t_pure.
// Every time is the apps' usual one (timing.hpp): a barrier before each
// iteration, the slowest rank's time, the median over iterations.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <functional>

#include "forms.hpp"
#include "results.hpp"

namespace bench {

// The formula above, on the three medians (us).
double overlap_percent(double pure_us, double compute_us, double total_us);

// The CPU-bound loop: `iterations` turns of a loop that touches no memory,
// so that it competes with the call for a core, not for memory bandwidth.
void compute(std::uint64_t iterations);

// Iterations of compute() that take about `seconds` on this rank: doubled
// from 1 until a run takes at least half of it, scaled, then scaled once
// more after a run at that length (each run the middle of three). Local.
std::uint64_t calibrate_compute(double seconds);

// The three times and the overlap for the buffers' current size, `call`
// being the started form and `blocking` the blocking call of the same
// collective on the same buffers. The loop is calibrated to a first
// measurement of t_pure; then t_pure, t_compute and t_total are timed
// taking turns (time_alternating), so that a drift of the machine's speed
// weighs on each alike. Collective over `comm`.
// `sleep`: the computation is a sleep, not the loop.
Overlap measure_overlap(MPI_Comm comm, int warmup, int iters, FormCall& call, const std::function<void()>& blocking,
                        bool sleep);

}  // namespace bench
