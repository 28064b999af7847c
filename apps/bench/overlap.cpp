// The overlap driver and its two methods: the started forms' host
// computation (an OSU-style calibrated loop between start and wait) and the
// stream-ordered one (a GPU kernel on another stream, through
// cuda::DeviceStream), each with its formula.
#include "overlap.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>

#include "timing.hpp"

namespace bench {
namespace {

// The middle one of three runs: the speed the timed runs will see. On a
// shared or virtual machine the loop's speed varies by 2x and more from run
// to run (other work, frequency, steal), so neither the fastest run nor a
// single one is a fair target.
double seconds_of(std::uint64_t iterations) {
  double seconds[3];
  for (double& s : seconds) {
    const double start = MPI_Wtime();
    compute(iterations);
    s = MPI_Wtime() - start;
  }
  std::sort(seconds, seconds + 3);
  return seconds[1];
}

// `iterations` scaled so that a run that took `took` takes `seconds` (the
// loop's time is linear in its iterations).
std::uint64_t scaled(std::uint64_t iterations, double took, double seconds) {
  if (took <= 0) return iterations;
  return std::max<std::uint64_t>(1, static_cast<std::uint64_t>(static_cast<double>(iterations) * seconds / took));
}

}  // namespace

double overlap_percent(double pure_us, double compute_us, double total_us) {
  if (pure_us <= 0) return 0;
  // Above 100 only when t_total came out below t_compute: noise, not more
  // than all of the call hidden.
  return std::clamp(100.0 * (1.0 - (total_us - compute_us) / pure_us), 0.0, 100.0);
}

double stream_overlap_percent(double comm_us, double compute_us, double both_us) {
  const double shorter = std::min(comm_us, compute_us);
  if (shorter <= 0) return 0;
  // Above 100 only when both together took less than the longer one alone,
  // below 0 when running them together cost more than one after the other:
  // noise or interference, not more (or less) than all of it hidden.
  return std::clamp(100.0 * (comm_us + compute_us - both_us) / shorter, 0.0, 100.0);
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
  iterations = scaled(iterations, took, seconds);
  // Once more at the target's length: short runs fit between the OS's
  // interruptions that long ones include, so they underestimate a long run.
  return scaled(iterations, seconds_of(iterations), seconds);
}

Overlap measure_overlap(MPI_Comm comm, int warmup, int iters, FormCall& call, const OverlapMethod& method) {
  const Timing target = time_collective(comm, warmup, iters, method.alone);
  const Computation work = method.computation_for(target.median_us);
  const auto part = [](const std::function<void()>& f) {
    if (f) f();
  };
  const std::vector<Timing> t = time_alternating(comm, warmup, iters,
                                                 {method.alone,
                                                  [&] {
                                                    part(work.launch);
                                                    part(work.during);
                                                    part(work.finish);
                                                  },
                                                  [&] {
                                                    part(work.launch);
                                                    call.start();
                                                    part(work.during);
                                                    call.wait();
                                                    part(work.finish);
                                                  }});
  return Overlap{t[0], t[1], t[2], method.percent(t[0].median_us, t[1].median_us, t[2].median_us)};
}

OverlapMethod host_overlap(const std::function<void()>& blocking, bool sleep) {
  OverlapMethod m;
  m.alone = blocking;
  m.computation_for = [sleep](double target_us) {
    Computation c;
    if (sleep) {
      const auto nap = std::chrono::duration<double, std::micro>(target_us);
      c.during = [nap] { std::this_thread::sleep_for(nap); };
    } else {
      const std::uint64_t iterations = calibrate_compute(target_us * 1e-6);
      c.during = [iterations] { compute(iterations); };
    }
    return c;
  };
  m.percent = overlap_percent;
  return m;
}

OverlapMethod stream_overlap(FormCall& call, cuda::DeviceStream& compute) {
  OverlapMethod m;
  m.alone = [&call] { call.run(); };
  m.computation_for = [&compute](double target_us) {
    const long long nanoseconds = std::max(1LL, std::llround(target_us * 1e3));
    Computation c;
    c.launch = [&compute, nanoseconds] { compute.busy(nanoseconds); };
    c.finish = [&compute] { compute.synchronize(); };
    return c;
  };
  m.percent = stream_overlap_percent;
  return m;
}

}  // namespace bench
