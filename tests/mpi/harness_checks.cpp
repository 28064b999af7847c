#include "harness_checks.hpp"

#include "harness_mpi.h"

#include <cstdio>
#include <optional>
#include <vector>

#include "harness_ranks.hpp"

namespace strata::test {

namespace {
constexpr int kPrintedFailures = 40;
std::optional<RankChecks> g_program_checks;
}  // namespace

RankChecks::RankChecks(std::string program, int bound_seconds)
    : program_(std::move(program)),
      rank_(world_rank()),
      watchdog_(std::make_unique<Watchdog>(watchdog_seconds(bound_seconds), rank_)) {
  watchdog_->arm("program '" + program_ + "'");
}

RankChecks::~RankChecks() = default;

void RankChecks::begin_case(const std::string& name) {
  if (watchdog_) watchdog_->arm("case '" + name + "' of " + program_);
}

bool RankChecks::check(bool ok, const std::string& what) {
  ++checks_;
  if (ok) return true;
  if (++failures_ <= kPrintedFailures) {
    std::printf("%s: FAIL on rank %d: %s\n", program_.c_str(), rank_, what.c_str());
    std::fflush(stdout);
  }
  return false;
}

bool RankChecks::check_every_rank(bool ok, const std::string& what) {
  check(ok, what);
  return all_ranks(MPI_COMM_WORLD, ok);
}

int RankChecks::finish() {
  watchdog_.reset();
  const std::vector<int> failing = ranks_where(MPI_COMM_WORLD, failures_ > 0);
  int tally[2] = {checks_, failures_}, total[2] = {0, 0};
  MPI_Allreduce(tally, total, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (rank_ == 0) {
    std::printf("strata-test %s: %s: %d ranks, %d checks (all ranks), %d failed%s%s\n",
                failing.empty() ? "SUCCESS" : "FAILURE", program_.c_str(), world_size(), total[0], total[1],
                failing.empty() ? "" : "; failing rank(s): ", rank_list(failing).c_str());
    std::fflush(stdout);
  }
  return failing.empty() ? 0 : 1;
}

int RankChecks::finish_rank() {
  watchdog_.reset();
  std::printf("%s: rank %d: %d of %d checks passed\n", program_.c_str(), rank_, checks_ - failures_, checks_);
  std::fflush(stdout);
  return failures_ == 0 ? 0 : 1;
}

RankChecks& start_program_checks(std::string program, int bound_seconds) {
  return g_program_checks.emplace(std::move(program), bound_seconds);
}

RankChecks& program_checks() { return *g_program_checks; }

int finish_program_checks() {
  const int status = g_program_checks->finish();
  g_program_checks.reset();
  return status;
}

}  // namespace strata::test
