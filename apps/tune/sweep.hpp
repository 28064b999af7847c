// The measurement: every candidate plan at every size, each timed like
// strata-bench (apps/common/timing.hpp). Sizes go in ascending order with
// every plan measured at a size before the next size starts, so a run cut
// short (interrupt, budget) holds whole sizes. Rank 0 decides every step
// (iterations, stop, sizes dropped for the budget) and broadcasts it, so
// the ranks never diverge.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "choice.hpp"
#include "strata/strata.hpp"

namespace tune {

// One rank's input and output of the largest size (f32, filled once).
class Workload {
 public:
  explicit Workload(std::size_t max_bytes);
  // One all_reduce (sum) of `bytes` (rounded down to whole f32, at least one).
  void run(strata::Communicator& comm, std::size_t bytes);

 private:
  std::vector<float> in_, out_;
};

struct Candidate {
  std::string plan;
  std::unique_ptr<strata::Communicator> comm;  // Config::all_reduce_spec = plan
};

struct SweepSettings {
  std::vector<std::size_t> sizes;  // ascending
  int iters = 20, min_iters = 5, warmup = 3;
  double budget_seconds = 0;  // 0: no budget
  bool progress = true;       // rank 0's lines on stderr
};

struct SweepResult {
  std::vector<SizeResult> sizes;            // the sizes measured in full, ascending
  std::vector<std::vector<int>> iterations; // per measured size, per plan: timed iterations
  std::vector<std::size_t> dropped;         // sizes left out to fit the budget
  bool interrupted = false;                 // stopped by a signal (agreed by every rank)
  double seconds = 0;                       // wall time of the sweep (rank 0's clock)
};

// Runs the sweep; collective over comm (every rank passes the same
// candidates and settings). `size_done` runs on every rank after each size
// is measured in full (rank 0 rewrites the spec file there).
SweepResult run_sweep(MPI_Comm comm, std::vector<Candidate>& candidates, Workload& workload,
                      const SweepSettings& settings, const std::function<void(const SweepResult&)>& size_done);

// The sweep's sizes: min, min*f, ... <= max, and max itself.
std::vector<std::size_t> sweep_sizes(std::size_t min_bytes, std::size_t max_bytes, std::size_t factor);

}  // namespace tune
