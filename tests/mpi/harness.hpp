// The MPI test harness's doctest part (harness.cpp holds the main), built
// on its core (harness_core.hpp: watchdog, rank helpers): doctest runs on every
// rank of MPI_COMM_WORLD; failures print with "on rank r"; the ranks'
// failure counts are combined so the job fails if any rank failed; only
// rank 0 prints the summary. A watchdog thread bounds every test case: a
// hang prints "strata-test HANG: test '<name>' on rank <r> exceeded <N> s"
// and exits 124 instead of eating the CI budget.
//
// Test bodies must stay collective: use CHECK (never REQUIRE) around code
// that other ranks will meet in a collective, so one rank's failure cannot
// leave the others waiting.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "harness_core.hpp"

namespace strata::test {

// What a call that should time out did: whether it raised DeadlineExceeded,
// its message (or what happened instead), the ranks it named and how long
// it took.
struct TimedOutcome {
  bool deadline = false;
  std::string message;
  std::vector<int> waiting_for;
  std::vector<int> in_earlier_call;
  double elapsed_seconds = 0;
};
TimedOutcome run_expecting_deadline(const std::function<void()>& call);

// What a test that stops a rank needs; making and destroying it are
// collective over MPI_COMM_WORLD. `pids`: every world rank's process;
// `side`: all ranks, where they meet apart from strata's own traffic;
// `survivors`: all but the last world rank, the one stopped (MPI_COMM_NULL
// on it); `usable`: 3+ ranks, all on this host (signals go by pid).
struct StopScene {
  std::vector<int> pids;
  MPI_Comm side = MPI_COMM_NULL, survivors = MPI_COMM_NULL;
  bool usable = false;
  StopScene();
  ~StopScene();
  StopScene(const StopScene&) = delete;
  StopScene& operator=(const StopScene&) = delete;
};

// Collects one output hash per call, then checks in one collective step
// that every rank got the same bits for every call (DESIGN.md: identical
// results on every rank). Rank 0 reports each differing call with its
// label and the ranks whose bits differ from rank 0's.
class SameBitsLog {
 public:
  void add(std::string label, const void* data, std::size_t bytes);
  // Collective over `comm`; clears the log.
  void check_same_on_all_ranks(MPI_Comm comm);

 private:
  std::vector<std::uint64_t> hashes_;
  std::vector<std::string> labels_;
};

}  // namespace strata::test
