// OSU-style overlap: a calibrated dummy computation between start and wait.
#include "overlap.hpp"

#include <algorithm>

#include "timing.hpp"

namespace bench {
namespace {

// The fastest of a few runs: calibration wants the loop's own speed, not
// the odd run the OS stretched.
double seconds_of(std::uint64_t iterations) {
  double best = 0;
  for (int run = 0; run < 3; ++run) {
    const double start = MPI_Wtime();
    compute(iterations);
    const double seconds = MPI_Wtime() - start;
    best = run == 0 ? seconds : std::min(best, seconds);
  }
  return best;
}

}  // namespace

double overlap_percent(double pure_us, double compute_us, double total_us) {
  if (pure_us <= 0) return 0;
  // Above 100 only when t_total came out below t_compute: noise, not more
  // than all of the call hidden.
  return std::clamp(100.0 * (1.0 - (total_us - compute_us) / pure_us), 0.0, 100.0);
}

void compute(std::uint64_t iterations) {
  // The empty asm takes the counter through a register the compiler cannot
  // see into, so it can neither drop the loop nor fold it into one step.
  for (std::uint64_t i = 0; i < iterations; ++i) asm volatile("" : "+r"(i));
}

std::uint64_t calibrate_compute(double seconds) {
  if (seconds <= 0) return 0;
  constexpr std::uint64_t kMost = std::uint64_t{1} << 50;  // days of looping: a bound, never a target
  std::uint64_t iterations = 1;
  double took = seconds_of(iterations);
  while (took < seconds / 2 && iterations < kMost) {
    iterations *= 2;
    took = seconds_of(iterations);
  }
  if (took <= 0) return iterations;
  // The loop's time is linear in its iterations.
  return std::max<std::uint64_t>(1, static_cast<std::uint64_t>(static_cast<double>(iterations) * seconds / took));
}

Overlap measure_overlap(MPI_Comm comm, int warmup, int iters, FormCall& call, const std::function<void()>& blocking) {
  const Timing target = time_collective(comm, warmup, iters, blocking);
  const std::uint64_t iterations = calibrate_compute(target.median_us * 1e-6);
  const std::vector<Timing> t = time_alternating(comm, warmup, iters,
                                                 {blocking, [&] { compute(iterations); },
                                                  [&] {
                                                    call.start();
                                                    compute(iterations);
                                                    call.wait();
                                                  }});
  Overlap o{t[0], t[1], t[2], overlap_percent(t[0].median_us, t[1].median_us, t[2].median_us)};
  return o;
}

}  // namespace bench
