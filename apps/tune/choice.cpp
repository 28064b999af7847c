#include "choice.hpp"

#include <algorithm>

#include "strata/spec.hpp"

namespace tune {

Winner pick(const SizeResult& result) {
  Winner w;
  w.bytes = result.bytes;
  for (int i = 0; i < static_cast<int>(result.times_us.size()); ++i) {
    const double t = result.times_us[static_cast<std::size_t>(i)];
    if (t < 0) continue;
    if (w.best < 0 || t < w.best_us) {
      w.runner_up = w.best;
      w.runner_up_us = w.best_us;
      w.best = i;
      w.best_us = t;
    } else if (w.runner_up < 0 || t < w.runner_up_us) {
      w.runner_up = i;
      w.runner_up_us = t;
    }
  }
  return w;
}

std::vector<Range> merge_ranges(const std::vector<SizeResult>& results, double tie) {
  std::vector<Range> ranges;
  for (const SizeResult& r : results) {
    Winner w = pick(r);
    if (w.best < 0) continue;
    if (!ranges.empty() && ranges.back().plan != w.best) {
      const int kept = ranges.back().plan;
      const double kept_us = r.times_us[std::size_t(kept)];
      if (kept_us >= 0 && kept_us <= w.best_us * (1 + tie)) w = {w.bytes, kept, kept_us, w.best, w.best_us};
    }
    if (ranges.empty() || ranges.back().plan != w.best) ranges.push_back({w.best, -1, {}});
    ranges.back().evidence.push_back(w);
  }
  for (std::size_t i = 0; i + 1 < ranges.size(); ++i)
    ranges[i].limit = static_cast<long long>(ranges[i].evidence.back().bytes);
  return ranges;
}

std::string spec_text(const std::vector<Range>& ranges, const std::vector<std::string>& plans) {
  std::vector<strata::SpecTuple> tuples;
  for (const Range& r : ranges) {
    // A plan is "name[#M]": the parser splits it into algorithm and shards.
    const strata::SpecTuple one = strata::AllReduceSpec(plans[static_cast<std::size_t>(r.plan)]).tuples().front();
    tuples.push_back({one.algorithm, one.shards, r.limit});
  }
  return strata::AllReduceSpec(tuples).to_string();
}

std::vector<Contest> contests(const std::vector<SizeResult>& results, const std::vector<double>& ratios,
                              const std::string& spec, const std::vector<std::string>& plans, double target) {
  const strata::AllReduceSpec verified(spec);
  std::vector<Contest> found;
  for (std::size_t k = 0; k < results.size() && k < ratios.size(); ++k) {
    if (ratios[k] <= target) continue;
    const strata::SpecTuple* runs = verified.select(results[k].bytes);
    if (!runs) continue;
    const std::string plan = strata::AllReduceSpec({{runs->algorithm, runs->shards, -1}}).to_string();  // "xring#2"
    const auto at = std::find(plans.begin(), plans.end(), plan);
    const int best = pick(results[k]).best;
    if (at == plans.end() || best < 0 || at - plans.begin() == best) continue;
    found.push_back({k, static_cast<int>(at - plans.begin()), best});
  }
  return found;
}

}  // namespace tune
