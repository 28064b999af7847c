// A doctest main for MPI (doctest's own MPI extension is not installed):
// MPI_Init, doctest on every rank with the "mpi" reporter below, failure
// counts combined with MPI_Allreduce, summary on rank 0, exit status
// non-zero if any rank failed. The reporter also arms the core's watchdog
// (harness_watchdog.hpp) when a test case starts and disarms it when it ends.
#define DOCTEST_CONFIG_IMPLEMENT
#include "harness.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <exception>
#include <sstream>
#include <string>
#include <thread>
#include <unistd.h>

#include "strata/errors.hpp"

namespace strata::test {

TimedOutcome run_expecting_deadline(const std::function<void()>& call) {
  TimedOutcome outcome;
  const auto start = std::chrono::steady_clock::now();
  try {
    call();
    outcome.message = "no exception";
  } catch (const DeadlineExceeded& e) {
    outcome.deadline = true;
    outcome.message = e.what();
    outcome.waiting_for = e.waiting_for();
    outcome.in_earlier_call = e.in_earlier_call();
  } catch (const std::exception& e) {
    outcome.message = std::string("wrong exception: ") + e.what();
  }
  outcome.elapsed_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return outcome;
}

StopScene::StopScene() {
  pids.resize(std::size_t(world_size()));
  const int mine = getpid();
  MPI_Allgather(&mine, 1, MPI_INT, pids.data(), 1, MPI_INT, MPI_COMM_WORLD);
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  std::vector<char> hosts(256 * std::size_t(world_size()));
  MPI_Allgather(host, 256, MPI_CHAR, hosts.data(), 256, MPI_CHAR, MPI_COMM_WORLD);
  usable = world_size() >= 3;
  for (int r = 0; r < world_size(); ++r) usable &= std::strcmp(&hosts[256 * std::size_t(r)], host) == 0;
  MPI_Comm_dup(MPI_COMM_WORLD, &side);
  const bool stopped = world_rank() == world_size() - 1;
  MPI_Comm_split(MPI_COMM_WORLD, stopped ? MPI_UNDEFINED : 0, 0, &survivors);
}

StopScene::~StopScene() {
  if (survivors != MPI_COMM_NULL) MPI_Comm_free(&survivors);
  MPI_Comm_free(&side);
}

void SameBitsLog::add(std::string label, const void* data, std::size_t bytes) {
  hashes_.push_back(hash_bytes(data, bytes));
  labels_.push_back(std::move(label));
}

void SameBitsLog::check_same_on_all_ranks(MPI_Comm comm) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  // The lengths first: if the ranks logged different numbers of calls the
  // test itself diverged, and gathering unequal lengths would be an error.
  const unsigned long long n = hashes_.size();
  std::vector<unsigned long long> lengths(static_cast<std::size_t>(size));
  MPI_Allgather(&n, 1, MPI_UNSIGNED_LONG_LONG, lengths.data(), 1, MPI_UNSIGNED_LONG_LONG, comm);
  bool same_length = true;
  for (unsigned long long l : lengths) same_length = same_length && l == n;
  CHECK_MESSAGE(same_length, "ranks logged different numbers of calls (this rank: " << n << ")");
  if (same_length && n > 0) {
    std::vector<std::uint64_t> all(n * static_cast<std::size_t>(size));
    MPI_Allgather(hashes_.data(), static_cast<int>(n), MPI_UINT64_T, all.data(), static_cast<int>(n), MPI_UINT64_T,
                  comm);
    if (rank == 0) {
      int reported = 0;
      for (std::size_t i = 0; i < n; ++i) {
        std::string differing;
        for (int r = 1; r < size; ++r)
          if (all[static_cast<std::size_t>(r) * n + i] != all[i]) differing += " " + std::to_string(r);
        if (!differing.empty() && ++reported <= 20)
          FAIL_CHECK("'" << labels_[i] << "': output bits on rank(s)" << differing << " differ from rank 0's");
      }
      CHECK_MESSAGE(reported == 0, reported << " call(s) gave different bits on different ranks");
    }
  }
  hashes_.clear();
  labels_.clear();
}

namespace {

Watchdog* g_watchdog = nullptr;
doctest::TestRunStats g_stats{};

// Prints every failure (with the rank and the active INFO/CAPTURE contexts)
// as one write, so lines from different ranks do not interleave.
struct MpiReporter : public doctest::IReporter {
  explicit MpiReporter(const doctest::ContextOptions&) : rank_(world_rank()) {}

  void emit(const std::string& text) {
    std::fwrite(text.data(), 1, text.size(), stderr);
    std::fflush(stderr);
  }
  std::string contexts() {
    std::ostringstream out;
    const int n = doctest::IReporter::get_num_active_contexts();
    const auto* active = doctest::IReporter::get_active_contexts();
    for (int i = 0; i < n; ++i) {
      out << "    with ";
      active[i]->stringify(&out);
      out << "\n";
    }
    return out.str();
  }

  void report_query(const doctest::QueryData& query) override {
    if (rank_ != 0) return;
    for (unsigned i = 0; i < query.num_data; ++i) std::printf("%s\n", query.data[i]->m_name);
  }
  void test_run_start() override {}
  void test_run_end(const doctest::TestRunStats& stats) override { g_stats = stats; }
  void test_case_start(const doctest::TestCaseData& tc) override {
    current_ = tc.m_name;
    if (g_watchdog) g_watchdog->arm("test '" + current_ + "'");
  }
  void test_case_reenter(const doctest::TestCaseData& tc) override { test_case_start(tc); }
  void test_case_end(const doctest::CurrentTestCaseStats&) override {
    if (g_watchdog) g_watchdog->disarm();
  }
  void test_case_exception(const doctest::TestCaseException& e) override {
    emit("strata-test: test '" + current_ + "' threw on rank " + std::to_string(rank_) + ": " +
         e.error_string.c_str() + "\n" + contexts());
  }
  void subcase_start(const doctest::SubcaseSignature&) override {}
  void subcase_end() override {}
  void log_assert(const doctest::AssertData& ad) override {
    if (!ad.m_failed) return;
    std::ostringstream out;
    out << ad.m_file << ":" << ad.m_line << ": FAILED on rank " << rank_ << " in test '" << current_ << "': "
        << doctest::assertString(ad.m_at) << "( " << ad.m_expr << " )";
    if (ad.m_threw) out << " threw: " << ad.m_exception.c_str();
    else if (ad.m_decomp.size() > 0) out << " with values ( " << ad.m_decomp.c_str() << " )";
    out << "\n" << contexts();
    emit(out.str());
  }
  void log_message(const doctest::MessageData& md) override {
    // Plain MESSAGEs are notes (e.g. "xring not registered yet"): rank 0
    // prints them once; warnings and failures print on every rank.
    const bool note = (md.m_severity & doctest::assertType::is_warn) && !(md.m_severity & doctest::assertType::is_check);
    if (note && rank_ != 0) return;
    std::ostringstream out;
    out << md.m_file << ":" << md.m_line << ": " << (note ? "note" : "FAILED") << " on rank " << rank_ << " in test '"
        << current_ << "': " << md.m_string.c_str() << "\n";
    if (!note) out << contexts();
    emit(out.str());
  }
  void test_case_skipped(const doctest::TestCaseData&) override {}

  int rank_;
  std::string current_;
};

REGISTER_REPORTER("mpi", 1, MpiReporter);

}  // namespace
}  // namespace strata::test

int main(int argc, char** argv) {
  using namespace strata::test;
  int provided = 0;
  // STRATA_TEST_MPI_THREAD=multiple asks for MPI_THREAD_MULTIPLE (the
  // progress thread may then call MPI: tests/mpi/test_requests.cpp).
  const char* level = std::getenv("STRATA_TEST_MPI_THREAD");
  const bool multiple = level != nullptr && std::string_view(level) == "multiple";
  MPI_Init_thread(&argc, &argv, multiple ? MPI_THREAD_MULTIPLE : MPI_THREAD_FUNNELED, &provided);
  const int rank = world_rank(), size = world_size();

  int failed_cases = 0, failed_asserts = 0, asserts = 0;
  {
    Watchdog watchdog(watchdog_seconds(120), rank);
    g_watchdog = &watchdog;
    doctest::Context context;
    context.applyCommandLine(argc, argv);
    context.setOption("reporters", "mpi");
    // STRATA_TEST_CASES: doctest's --test-case filter, for a variant that
    // runs part of a program (tests/mpi/meson.build).
    if (const char* cases = std::getenv("STRATA_TEST_CASES"); cases && *cases) context.setOption("test-case", cases);
    context.run();
    g_watchdog = nullptr;
    failed_cases = static_cast<int>(g_stats.numTestCasesFailed);
    failed_asserts = g_stats.numAssertsFailed;
    asserts = g_stats.numAsserts;
    if (context.shouldExit()) {
      MPI_Finalize();
      return 0;
    }
  }

  const std::vector<int> failing = ranks_where(MPI_COMM_WORLD, failed_cases > 0 || failed_asserts > 0);
  int total_failed_asserts = 0, total_asserts = 0, max_failed_cases = 0;
  MPI_Allreduce(&failed_asserts, &total_failed_asserts, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Allreduce(&asserts, &total_asserts, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  MPI_Allreduce(&failed_cases, &max_failed_cases, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0) {
    std::string ranks;
    for (int r : failing) ranks += " " + std::to_string(r);
    std::printf("strata-test %s: %d ranks, %u test cases, %d assertions (all ranks), %d failed%s%s\n",
                failing.empty() ? "SUCCESS" : "FAILURE", size, g_stats.numTestCasesPassingFilters, total_asserts,
                total_failed_asserts, failing.empty() ? "" : "; failing rank(s):", ranks.c_str());
    std::fflush(stdout);
  }
  MPI_Finalize();
  return failing.empty() ? 0 : 1;
}
