#include "verify.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "options.hpp"
#include "timing.hpp"

namespace tune {
namespace {

constexpr double kMinSeconds = 0.02;
constexpr int kMaxIters = 1000;

// Iterations per side at size k: cheap calls get more (each side at least
// kMinSeconds, at most kMaxIters): a 5% verdict on a 0.5 us call needs more
// samples than -n gives. Every rank computes the same count from the
// sweep's times. Under --budget, the iterations the sweep could afford there.
int iterations_at(const SweepResult& result, std::size_t k, int iters, bool budgeted) {
  const Winner w = pick(result.sizes[k]);
  if (budgeted) return result.iterations[k][std::size_t(w.best)];
  const int wanted = static_cast<int>(kMinSeconds / std::max(w.best_us * 1e-6, 1e-9));
  return std::clamp(wanted, iters, std::max(iters, kMaxIters));
}

// verify() over the sizes where `again` holds (all when empty); the other
// rows are `previous`'s.
std::vector<VerifyRow> verify_sizes(MPI_Comm comm, const std::string& spec, const SweepResult& result,
                                    std::vector<Candidate>& candidates, Workload& workload, int warmup, int iters,
                                    bool budgeted, const std::vector<bool>& again,
                                    const std::vector<VerifyRow>& previous) {
  strata::Communicator tuned(comm, strata::Config{.all_reduce_spec = spec});
  std::vector<VerifyRow> rows;
  for (std::size_t k = 0; k < result.sizes.size(); ++k) {
    if (!again.empty() && !again[k]) {
      rows.push_back(previous[k]);
      continue;
    }
    const SizeResult& size = result.sizes[k];
    Candidate& best = candidates[std::size_t(pick(size).best)];
    const int n = iterations_at(result, k, iters, budgeted);
    const auto t = bench::time_alternating(comm, warmup, n,
                                           {[&] { workload.run(tuned, size.bytes); },
                                            [&] { workload.run(*best.comm, size.bytes); }});
    rows.push_back({size.bytes, tuned.algorithm_for(size.bytes), best.plan, t[0].median_us, t[1].median_us});
  }
  return rows;
}

}  // namespace

std::vector<VerifyRow> verify(MPI_Comm comm, const std::string& spec, const SweepResult& result,
                              std::vector<Candidate>& candidates, Workload& workload, int warmup, int iters,
                              bool budgeted) {
  return verify_sizes(comm, spec, result, candidates, workload, warmup, iters, budgeted, {}, {});
}

std::vector<VerifyRow> verify_again(MPI_Comm comm, const std::string& first_spec, const std::string& spec,
                                    const std::vector<Contest>& rechecked, const std::vector<VerifyRow>& first,
                                    const SweepResult& result, std::vector<Candidate>& candidates, Workload& workload,
                                    int warmup, int iters, bool budgeted) {
  const strata::AllReduceSpec before(first_spec), after(spec);
  std::vector<bool> again(result.sizes.size(), false);
  for (std::size_t k = 0; k < result.sizes.size(); ++k) {
    const strata::SpecTuple *was = before.select(result.sizes[k].bytes), *is = after.select(result.sizes[k].bytes);
    again[k] = was->algorithm != is->algorithm || was->shards != is->shards;  // (limits may move, plans not)
  }
  for (const Contest& c : rechecked) again[c.size] = true;
  return verify_sizes(comm, spec, result, candidates, workload, warmup, iters, budgeted, again, first);
}

std::vector<Contest> recheck(MPI_Comm comm, const std::string& spec, const std::vector<VerifyRow>& rows,
                             SweepResult& result, std::vector<Candidate>& candidates, Workload& workload, int warmup,
                             int iters, bool budgeted) {
  std::vector<double> ratios;
  for (const VerifyRow& r : rows) ratios.push_back(r.ratio());
  std::vector<std::string> plans;
  for (const Candidate& c : candidates) plans.push_back(c.plan);
  const std::vector<Contest> found = contests(result.sizes, ratios, spec, plans, kVerifyTarget);
  for (const Contest& c : found) {
    SizeResult& size = result.sizes[c.size];
    const auto t = bench::time_alternating(comm, warmup, iterations_at(result, c.size, iters, budgeted),
                                           {[&] { workload.run(*candidates[std::size_t(c.kept)].comm, size.bytes); },
                                            [&] { workload.run(*candidates[std::size_t(c.best)].comm, size.bytes); }});
    size.times_us[std::size_t(c.kept)] = t[0].median_us;
    size.times_us[std::size_t(c.best)] = t[1].median_us;
  }
  return found;
}

bool verify_met(const std::vector<VerifyRow>& rows) {
  return std::all_of(rows.begin(), rows.end(), [](const VerifyRow& r) { return r.ratio() <= kVerifyTarget; });
}

std::string verify_report(const std::vector<VerifyRow>& rows) {
  std::string t = "# verification: the tuned spec (through the library) against the best fixed plan, alternating\n";
  t += fmt::format("# {:>10} {:>16} {:>16} {:>12} {:>12} {:>7}\n", "size", "tuned runs", "best fixed", "tuned us",
                   "best us", "ratio");
  const VerifyRow* worst = nullptr;
  int missed = 0;
  for (const VerifyRow& r : rows) {
    t += fmt::format("  {:>10} {:>16} {:>16} {:>12.2f} {:>12.2f} {:>7.3f}{}\n", human_bytes(double(r.bytes)),
                     r.tuned_runs, r.best_plan, r.tuned_us, r.best_us, r.ratio(),
                     r.ratio() > kVerifyTarget ? "  > 1.05" : "");
    if (!worst || r.ratio() > worst->ratio()) worst = &r;
    missed += r.ratio() > kVerifyTarget;
  }
  if (!worst) return t + "verify: nothing measured\n";
  t += fmt::format("verify: tuned/best within {:.0f}% at {} of {} sizes (worst {:.3f} at {}): {}\n",
                   100 * (kVerifyTarget - 1), rows.size() - std::size_t(missed), rows.size(), worst->ratio(),
                   human_bytes(double(worst->bytes)), missed ? "target missed" : "target met");
  return t;
}

}  // namespace tune
