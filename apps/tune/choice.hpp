// From measurements to a spec: the best plan per size, its margin over the
// runner-up, and neighbouring sizes with the same winner merged into one
// range. Pure: no MPI, no clock (tests/tune checks it by hand).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace tune {

// One measured size: the median time (us) of every candidate, in the
// candidates' order; a negative time marks a plan not measured there.
struct SizeResult {
  std::size_t bytes = 0;
  std::vector<double> times_us;
};

struct Winner {
  std::size_t bytes = 0;
  int best = -1;         // index into the candidates
  double best_us = 0;
  int runner_up = -1;    // -1 when only one plan was measured
  double runner_up_us = 0;
  // runner_up_us / best_us - 1 (0.25: the runner-up is 25% slower); 0 without one.
  double margin() const { return runner_up < 0 ? 0 : runner_up_us / best_us - 1; }
};

// A range of sizes with one winner: sizes up to `limit` bytes (inclusive;
// -1: no bound) that the previous range did not take.
struct Range {
  int plan = -1;
  long long limit = -1;
  std::vector<Winner> evidence;  // the measured sizes behind it, ascending
};

// The winner of one size (ties go to the earlier candidate).
Winner pick(const SizeResult& result);

// Ranges over `results` (ascending sizes): consecutive sizes with the same
// winner merge; each range's limit is its largest measured size, the last
// range's is -1 (it takes every larger message too). A size whose winner
// beats the current range's plan by less than `tie` (0.03: 3%) stays in
// that range: within the noise of a median, a new range would be a coin
// toss (on 2 ranks pscpu and pscpu#2 are the same plan). Its evidence then
// names the plan kept (`best`) and the measured winner as runner-up.
// Empty input: empty.
std::vector<Range> merge_ranges(const std::vector<SizeResult>& results, double tie = 0);

// The spec text of `ranges` over `plans` ("pscpu:65536:xring#2"),
// normalised by strata's own parser (AllReduceSpec::to_string).
std::string spec_text(const std::vector<Range>& ranges, const std::vector<std::string>& plans);

// A size a verification missed (tuned / best above `target`) where the
// spec runs another plan than the size's best: the two to time again.
struct Contest {
  std::size_t size = 0;  // index into the results
  int kept = -1;         // the plan the spec runs there, index into `plans`
  int best = -1;         // the size's winner
};

// The contests among `results` (ascending sizes), given each size's
// verified ratio (`ratios[k]` for results[k]) and the spec that was
// verified (its plans are texts of `plans`, "xring#2"). Sizes where the
// spec runs the winner itself are no contest: there the miss is between
// two communicators running one plan.
std::vector<Contest> contests(const std::vector<SizeResult>& results, const std::vector<double>& ratios,
                              const std::string& spec, const std::vector<std::string>& plans, double target);

}  // namespace tune
