// Per-rank checks for the MPI test programs that have their own main (part
// of the harness core, harness_core.hpp; the doctest programs get the same
// from harness.cpp's reporter): each failure prints with its rank, the
// ranks' failures combine so the job fails if any rank failed, and a
// watchdog bounds the program (and, re-armed, each case).
//
// Checks around collectives must stay collective: a rank that fails one
// goes on to the next call, so no other rank is left waiting.
#pragma once

#include <memory>
#include <string>

#include "harness_watchdog.hpp"

namespace strata::test {

class RankChecks {
 public:
  // After MPI_Init. Arms a watchdog over "program '<program>'" bounded by
  // STRATA_TEST_WATCHDOG_S, or `bound_seconds` where that is unset.
  RankChecks(std::string program, int bound_seconds);
  ~RankChecks();
  RankChecks(const RankChecks&) = delete;
  RankChecks& operator=(const RankChecks&) = delete;

  // Re-arms the watchdog for a full bound over "case '<name>' of
  // <program>", so that the HANG line names the case.
  void begin_case(const std::string& name);

  // Counts a check of this rank's own; a failed one prints
  // "<program>: FAIL on rank R: <what>" (the first 40 of them). Returns ok.
  bool check(bool ok, const std::string& what);
  // Collective over MPI_COMM_WORLD: check(ok, what) on every rank, then
  // whether every rank's `ok` held (the same answer everywhere, so the
  // ranks can take the same path after it).
  bool check_every_rank(bool ok, const std::string& what);

  int checks() const { return checks_; }
  int failures() const { return failures_; }
  int rank() const { return rank_; }
  const std::string& program() const { return program_; }

  // Collective over MPI_COMM_WORLD: stops the watchdog, combines every
  // rank's tally and prints on rank 0
  //   strata-test SUCCESS|FAILURE: <program>: R ranks, N checks (all ranks), F failed[; failing rank(s): ...]
  // Returns the exit status, the same on every rank: 0 iff no rank failed.
  int finish();
  // This rank alone, without MPI (for programs whose every MPI call is
  // under test, as the interposer's are): stops the watchdog, prints
  // "<program>: rank R: P of N checks passed" and returns 0 iff this rank
  // failed none; the launcher fails the job if any rank exits non-zero.
  int finish_rank();

 private:
  std::string program_;
  int rank_ = 0;
  int checks_ = 0, failures_ = 0;
  std::unique_ptr<Watchdog> watchdog_;
};

// The program's one RankChecks, for programs whose checks are spread over
// free functions: start_program_checks after MPI_Init (once), then the
// rest anywhere until finish_program_checks (collective, as
// RankChecks::finish), which returns the exit status.
RankChecks& start_program_checks(std::string program, int bound_seconds);
RankChecks& program_checks();
int finish_program_checks();

// program_checks().check and .check_every_rank.
inline bool rank_check(bool ok, const std::string& what) { return program_checks().check(ok, what); }
inline bool every_rank_check(bool ok, const std::string& what) { return program_checks().check_every_rank(ok, what); }

}  // namespace strata::test
