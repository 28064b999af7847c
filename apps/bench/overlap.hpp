// --overlap: how much of a call's time a computation running meanwhile
// hides, per size, in one of two ways that share one driver
// (measure_overlap):
//
// A started form (--form nonblocking or persistent), as OSU's
// osu_iallreduce does:
//   t_pure    the blocking call's median time;
//   t_compute a CPU-bound loop on registers, calibrated on each rank to take
//             about t_pure, timed alone (--overlap-compute sleep: a sleep of
//             t_pure, which leaves the core to the progress thread);
//   t_total   start the call, run the loop, wait;
//   overlap % = max(0, 100 x (1 - (t_total - t_compute) / t_pure)), at most
//             100: the share of the call that did not add to the
//             computation's time. 0 when the call only runs inside wait()
//             (no progress thread): then t_total = t_compute + t_pure.
//
// A stream-ordered call (--memory cuda --stream-ordered):
//   T_comm    the call on its stream, then a wait for that stream;
//   T_compute strata::bench::busy_kernel on another stream of the device,
//             set to run about T_comm, then a wait for that stream;
//   T_both    the kernel launched, the call made, both streams waited for;
//   overlap % = 100 x (T_comm + T_compute - T_both) / min(T_comm, T_compute),
//             clamped to [0, 100]: the share of the shorter of the two that
//             ran hidden behind the other. The kernel is enqueued before
//             the call, so that a call that still blocks the host until its
//             result is in place overlaps it too.
//
// Every time is the apps' usual one (timing.hpp): a barrier before each
// iteration, the slowest rank's time, the median over iterations.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <functional>

#include "forms.hpp"
#include "results.hpp"

namespace bench {

// The started forms' formula above, on the three medians (us).
double overlap_percent(double pure_us, double compute_us, double total_us);

// The stream-ordered formula above, on the three medians (us).
double stream_overlap_percent(double comm_us, double compute_us, double both_us);

// The CPU-bound loop: `iterations` turns of a loop that touches no memory,
// so that it competes with the call for a core, not for memory bandwidth.
void compute(std::uint64_t iterations);

// Iterations of compute() that take about `seconds` on this rank: doubled
// from 1 until a run takes at least half of it, scaled, then scaled once
// more after a run at that length (each run the middle of three). Local.
std::uint64_t calibrate_compute(double seconds);

// A computation in the three places it can take around a call: `launch`
// before the call starts (a GPU kernel, enqueued), `during` between the
// call's start and its wait (host work), `finish` after the wait (waiting
// for the kernel). Alone it is launch, during, finish. Empty parts are
// skipped.
struct Computation {
  std::function<void()> launch, during, finish;
};

// How one overlap measurement is made: `alone` is the call timed alone
// (t_pure, T_comm), `computation_for(target_us)` the computation sized to
// take about `target_us` (alone's first median), `percent` the formula.
struct OverlapMethod {
  std::function<void()> alone;
  std::function<Computation(double target_us)> computation_for;
  double (*percent)(double alone_us, double compute_us, double both_us) = nullptr;
};

// The three times and the overlap for the buffers' current size, `call`
// being the form whose start() and wait() the computation goes around.
// alone is timed once first to size the computation; then alone, the
// computation alone and both are timed taking turns (time_alternating), so
// that a drift of the machine's speed weighs on each alike. Collective over
// `comm`.
Overlap measure_overlap(MPI_Comm comm, int warmup, int iters, FormCall& call, const OverlapMethod& method);

// The started forms' method: `blocking` is the blocking call of the same
// collective on the same buffers; `sleep`: the computation is a sleep, not
// the loop.
OverlapMethod host_overlap(const std::function<void()>& blocking, bool sleep);

// The stream-ordered method: `call` is the stream-ordered form (its run()
// is T_comm's call), `compute` the other stream the busy kernel runs on.
// Both must outlive the method.
OverlapMethod stream_overlap(FormCall& call, cuda::DeviceStream& compute);

}  // namespace bench
