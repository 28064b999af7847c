#include "sweep.hpp"

#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "options.hpp"
#include "stop.hpp"
#include "timing.hpp"

namespace tune {
namespace {

// What rank 0 decided for the next step, broadcast as plain ints.
struct Decision {
  int stop = 0;       // 1: interrupted, stop now
  int iters = 0;      // timed iterations for this step
  int last_size = 0;  // sizes from this index on are dropped for the budget
};

Decision broadcast(Decision d, MPI_Comm comm) {
  int v[3] = {d.stop, d.iters, d.last_size};
  MPI_Bcast(v, 3, MPI_INT, 0, comm);
  return {v[0], v[1], v[2]};
}

// How far the budget looks ahead: a size more than this many times the
// last measured one is not judged yet (a line through two latency-bound
// sizes says nothing about 64 MiB); it is judged when the sweep gets near.
constexpr double kReach = 64;

// The sizes among [from, last) within reach of the last measured size.
std::size_t within_reach(const SweepResult& r, const SweepSettings& s, std::size_t from, std::size_t last) {
  if (r.sizes.empty()) return from;
  std::size_t end = from;
  while (end < last && double(s.sizes[end]) <= kReach * double(r.sizes.back().bytes)) ++end;
  return end;
}

// Seconds the sizes [from, last) would take with the fewest iterations:
// each plan's time extrapolated along the line through its last two
// measured sizes. Made again before every size, so the line follows.
double estimate(const SweepResult& r, const SweepSettings& s, std::size_t from, std::size_t last) {
  if (r.sizes.empty()) return 0;
  const SizeResult& b = r.sizes.back();
  const SizeResult* a = r.sizes.size() > 1 ? &r.sizes[r.sizes.size() - 2] : nullptr;
  double seconds = 0;
  for (std::size_t p = 0; p < b.times_us.size(); ++p) {
    const double slope = a ? std::max(0.0, (b.times_us[p] - a->times_us[p]) / double(b.bytes - a->bytes)) : 0;
    for (std::size_t k = from; k < last; ++k) {
      const double us = b.times_us[p] + slope * (double(s.sizes[k]) - double(b.bytes));
      seconds += us * 1e-6 * (s.min_iters + s.warmup + 1);
    }
  }
  return seconds;
}

}  // namespace

Workload::Workload(std::size_t max_bytes)
    : in_(std::max<std::size_t>(max_bytes / sizeof(float), 1), 1.0f), out_(in_.size(), 0.0f) {}

void Workload::run(strata::Communicator& comm, std::size_t bytes) {
  const std::size_t count = std::clamp<std::size_t>(bytes / sizeof(float), 1, in_.size());
  comm.all_reduce(strata::Tensor{in_.data(), count, strata::DataType::f32},
                  strata::Tensor{out_.data(), count, strata::DataType::f32}, strata::ReduceOp::sum);
}

std::vector<std::size_t> sweep_sizes(std::size_t min_bytes, std::size_t max_bytes, std::size_t factor) {
  std::vector<std::size_t> sizes;
  for (std::size_t b = min_bytes; b <= max_bytes; b *= factor) {
    sizes.push_back(b);
    if (b > max_bytes / factor) break;
  }
  // The largest size is always measured (8 B by 4 would stop at 32 MiB).
  if (sizes.back() != max_bytes) sizes.push_back(max_bytes);
  return sizes;
}

SweepResult run_sweep(MPI_Comm comm, std::vector<Candidate>& candidates, Workload& workload,
                      const SweepSettings& s, const std::function<void(const SweepResult&)>& size_done) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  const bool talk = rank == 0 && s.progress;
  const bool tty = isatty(STDERR_FILENO);
  const double start = MPI_Wtime();
  SweepResult r;
  std::size_t last = s.sizes.size();
  const std::size_t plans = candidates.size();
  for (std::size_t k = 0; k < last && !r.interrupted; ++k) {
    // The budget: drop the largest sizes while even the fewest iterations
    // would not fit in what is left (rank 0's clock decides).
    Decision d;
    if (rank == 0 && s.budget_seconds > 0) {
      const double left = s.budget_seconds - (MPI_Wtime() - start);
      // Only sizes within reach are judged; farther ones keep their place.
      const std::size_t reach = within_reach(r, s, k, last);
      std::size_t keep = reach;
      while (keep > k + 1 && estimate(r, s, k, keep) > left) --keep;
      if (keep == k + 1 && !r.sizes.empty() && estimate(r, s, k, keep) > left) keep = k;
      d.last_size = static_cast<int>(keep < reach ? keep : last);
    } else {
      d.last_size = static_cast<int>(last);
    }
    d = broadcast(d, comm);
    if (static_cast<std::size_t>(d.last_size) < last) {
      for (std::size_t j = static_cast<std::size_t>(d.last_size); j < last; ++j) r.dropped.push_back(s.sizes[j]);
      if (rank == 0) {
        const std::size_t first_dropped = static_cast<std::size_t>(d.last_size);
        const std::string what = first_dropped + 1 == last
                                     ? human_bytes(double(s.sizes[first_dropped]))
                                     : fmt::format("{} .. {} ({} sizes)", human_bytes(double(s.sizes[first_dropped])),
                                                   human_bytes(double(s.sizes[last - 1])), last - first_dropped);
        std::fprintf(stderr, "%sstrata-tune: --budget (the sweep's share, %g s): dropping %s: %.1f s left would not hold it at %d iterations\n",
                     tty ? "\r" : "", s.budget_seconds, what.c_str(), s.budget_seconds - (MPI_Wtime() - start),
                     s.min_iters);
      }
      std::sort(r.dropped.begin(), r.dropped.end());
      last = static_cast<std::size_t>(d.last_size);
      if (k >= last) break;
    }
    SizeResult size{s.sizes[k], std::vector<double>(plans, -1.0)};
    std::vector<int> iterations(plans, 0);
    for (std::size_t p = 0; p < plans; ++p) {
      if (stop::agreed(comm)) {
        r.interrupted = true;
        break;
      }
      auto call = [&] { workload.run(*candidates[p].comm, s.sizes[k]); };
      // One probe call (slowest rank) sizes the iterations to the budget.
      const double probe_s = bench::time_collective(comm, 0, 1, call).median_us * 1e-6;
      Decision step;
      if (rank == 0) {
        step.iters = s.iters;
        if (s.budget_seconds > 0) {
          const double left = s.budget_seconds - (MPI_Wtime() - start);
          const double steps_left = double((last - k) * plans - p);
          const double allowance = std::max(0.0, left / steps_left);
          const int fits = static_cast<int>(allowance / std::max(probe_s, 1e-9)) - s.warmup;
          step.iters = std::clamp(fits, s.min_iters, s.iters);
        }
      }
      step = broadcast(step, comm);
      if (talk)
        std::fprintf(stderr, "%sstrata-tune: size %zu of %zu (%s), plan %zu of %zu (%s), %d iterations, %.1f s%s",
                     tty ? "\r\033[K" : "", k + 1, last, human_bytes(double(s.sizes[k])).c_str(), p + 1, plans,
                     candidates[p].plan.c_str(), step.iters, MPI_Wtime() - start, tty ? "" : "\n");
      size.times_us[p] = bench::time_collective(comm, s.warmup, step.iters, call).median_us;
      iterations[p] = step.iters;
    }
    if (r.interrupted) break;
    r.sizes.push_back(size);
    r.iterations.push_back(iterations);
    r.seconds = MPI_Wtime() - start;
    size_done(r);
  }
  if (talk && tty) std::fprintf(stderr, "\r\033[K");
  r.seconds = MPI_Wtime() - start;
  return r;
}

}  // namespace tune
