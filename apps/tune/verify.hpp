// The verification pass: the tuned spec, run through the library as an
// application would run it, against the best fixed plan at each measured
// size, the two taking turns call by call (bench::time_alternating), so
// both see the same machine. The target: tuned / best <= 1 + 5% everywhere.
#pragma once

#include <mpi.h>

#include <string>
#include <vector>

#include "sweep.hpp"

namespace tune {

constexpr double kVerifyTarget = 1.05;

struct VerifyRow {
  std::size_t bytes = 0;
  std::string tuned_runs;  // what the tuned communicator runs at this size (algorithm_for)
  std::string best_plan;   // the fixed plan that won this size in the sweep
  double tuned_us = 0, best_us = 0;
  double ratio() const { return tuned_us / best_us; }
};

// Collective over comm. `spec`: the tuned spec (the same text on every
// rank); `result`: the sweep it came from; `candidates`: the fixed plans'
// communicators. Every size of `result` is timed with at least `iters`
// iterations, more for calls faster than 20 ms / iters (up to 1000, so that
// each side of a cheap size gets 20 ms of samples); `budgeted` (--budget):
// the iterations the sweep gave the winner there instead.
std::vector<VerifyRow> verify(MPI_Comm comm, const std::string& spec, const SweepResult& result,
                              std::vector<Candidate>& candidates, Workload& workload, int warmup, int iters,
                              bool budgeted);

// The re-check after a verification that missed: at each size where the
// tuned spec runs another plan than the sweep's best (a plan kept within
// --tie, or a range's plan carried over), the two plans' fixed
// communicators are timed again, alternating, with the verification's
// iterations, and their times in `result` replaced, so that the ranges made
// from it decide that size on more samples. Sizes where the tuned spec
// runs the best plan itself are left alone. Collective; returns the sizes
// re-timed (the same on every rank).
std::vector<Contest> recheck(MPI_Comm comm, const std::string& spec, const std::vector<VerifyRow>& rows,
                             SweepResult& result, std::vector<Candidate>& candidates, Workload& workload, int warmup,
                             int iters, bool budgeted);

// The verification of the spec rewritten after a re-check: the sizes
// re-timed and those whose plan `spec` changed from `first_spec` are
// verified again; every other size keeps its row from `first`, so no miss
// gets a second draw of the same comparison. Collective.
std::vector<VerifyRow> verify_again(MPI_Comm comm, const std::string& first_spec, const std::string& spec,
                                    const std::vector<Contest>& rechecked, const std::vector<VerifyRow>& first,
                                    const SweepResult& result, std::vector<Candidate>& candidates, Workload& workload,
                                    int warmup, int iters, bool budgeted);

// The table and the one-line verdict, as printed (rank 0).
std::string verify_report(const std::vector<VerifyRow>& rows);

// Whether every size met the target.
bool verify_met(const std::vector<VerifyRow>& rows);

}  // namespace tune
