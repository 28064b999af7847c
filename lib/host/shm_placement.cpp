#include "host/shm_placement.hpp"

#include <sched.h>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <mutex>

#include "host/transport.hpp"
#include "util/check.hpp"
#include "util/env_word.hpp"
#include "util/log.hpp"

namespace strata::host::shm {
namespace {

using Clock = std::chrono::steady_clock;

// Round trips: kBatches batches of kPerBatch after kWarmup; the
// fastest batch's mean is the pair's round trip (interruptions only ever
// add time).
constexpr int kWarmup = 50, kBatches = 5, kPerBatch = 40;
// How long local rank 0 gives the measurement, and how long its peer waits
// for each exchange: far past a normal pair (< 1 ms), short enough not to be
// noticed at communicator creation when a rank is slow.
constexpr std::chrono::milliseconds kPairBudget{50};

// A recheck's exchanges: fewer than at creation (it runs inside a
// training loop), enough to tell 54-136 ns from 328-655 ns; and how long
// either rank waits for the other to take part (right after the same call
// both are there within microseconds).
constexpr int kRecheckWarmup = 6, kRecheckBatches = 3, kRecheckPerBatch = 8;
constexpr std::chrono::milliseconds kRecheckBudget{5};

std::mutex last_mutex;
PlacementVerdict last;

std::atomic<std::uint64_t> recheck_every{kRecheckEveryCalls};
std::atomic<PlacementRule> recheck_rule{nullptr};

void remember(const PlacementVerdict& verdict) {
  const std::lock_guard<std::mutex> lock(last_mutex);
  last = verdict;
}

// Spins on `line` until `done(value)` or `until`; yields the CPU now and
// then, so that two ranks sharing one CPU still make progress.
template <typename Done>
bool wait_for(const std::atomic<std::uint64_t>& line, Done done, Clock::time_point until) {
  for (unsigned spins = 1;; ++spins) {
    if (done(line.load(std::memory_order_acquire))) return true;
    if (spins % 1024 == 0) {
      if (Clock::now() > until) return false;
      sched_yield();
    }
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  }
}

// How many exchanges a measurement makes, and how long it may take.
struct Exchanges {
  int warmup, batches, per_batch;
  std::chrono::milliseconds budget;
  int total() const { return warmup + batches * per_batch; }
};
constexpr Exchanges kAtCreation{kWarmup, kBatches, kPerBatch, kPairBudget};
constexpr Exchanges kAtRecheck{kRecheckWarmup, kRecheckBatches, kRecheckPerBatch, kRecheckBudget};

// Exchange i of a measurement writes tag(epoch, i) and the peer echoes it:
// a recheck's values never match an earlier one's (creation is epoch 0).
std::uint64_t tag(std::uint64_t epoch, int i) { return (epoch << 16) | static_cast<std::uint64_t>(i); }

// Local rank 0's side: the round trip in ns, or a negative number when
// the peer did not answer within the budget.
double time_pair(std::atomic<std::uint64_t>& mine, const std::atomic<std::uint64_t>& theirs, const Exchanges& x,
                 std::uint64_t epoch = 0) {
  const Clock::time_point until = Clock::now() + x.budget;
  double best = -1;
  int i = 0;
  auto exchange = [&] {
    const std::uint64_t value = tag(epoch, ++i);
    mine.store(value, std::memory_order_release);
    return wait_for(theirs, [&](std::uint64_t v) { return v == value; }, until);
  };
  for (int w = 0; w < x.warmup; ++w)
    if (!exchange()) return -1;
  for (int b = 0; b < x.batches; ++b) {
    const Clock::time_point start = Clock::now();
    for (int k = 0; k < x.per_batch; ++k)
      if (!exchange()) return -1;
    const double ns = std::chrono::duration<double, std::nano>(Clock::now() - start).count() / x.per_batch;
    best = best < 0 ? ns : std::min(best, ns);
  }
  return best;
}

// Local rank 1's side: echo every exchange until the last (true), or until
// local rank 0 stops sending them or `gave_up()` (false).
template <typename GaveUp>
bool echo_pair(std::atomic<std::uint64_t>& mine, const std::atomic<std::uint64_t>& zeros, const Exchanges& x,
               std::uint64_t epoch, GaveUp gave_up) {
  for (int i = 1; i <= x.total(); ++i) {
    const std::uint64_t value = tag(epoch, i);
    bool stop = false;
    const bool sent = wait_for(zeros, [&](std::uint64_t v) { return v == value || (stop = gave_up()); },
                               Clock::now() + x.budget);
    if (!sent || stop) return false;
    mine.store(value, std::memory_order_release);
  }
  return true;
}
void echo_pair(std::atomic<std::uint64_t>& mine, const std::atomic<std::uint64_t>& zeros) {
  echo_pair(mine, zeros, kAtCreation, 0, [] { return false; });
}

// Local rank 0's verdict word: the epoch it answers and what it says.
enum class Word : std::uint64_t { keep = 0, near = 1, far = 2 };
std::uint64_t verdict_word(std::uint64_t epoch, Word word) { return (epoch << 2) | static_cast<std::uint64_t>(word); }
std::uint64_t epoch_of(std::uint64_t word) { return word >> 2; }
Word word_of(std::uint64_t word) { return static_cast<Word>(word & 3); }

void log_change(const PlacementVerdict& v, std::uint64_t epoch) {
  static std::atomic<bool> logged{false};
  const util::LogLevel level = logged.exchange(true) ? util::LogLevel::trace : util::LogLevel::info;
  util::log(level,
            "local ranks now sit {} each other (cache-line round trip {:.0f} ns, measured again after call #{}): {} "
            "from the next call",
            v.placement == Placement::near ? "near" : "far from", v.round_trip_ns, epoch,
            v.placement == Placement::near ? "the shared-memory rounds carry every size"
                                           : "large messages read peers' buffers directly");
}

void log_verdict(const PlacementVerdict& v) {
  static std::once_flag once;
  std::call_once(once, [&] {
    if (v.placement == Placement::near)
      util::log(util::LogLevel::info,
                "local ranks sit near each other (cache-line round trip {:.0f} ns at most, with local rank {}; near "
                "means <= {:.0f} ns): the shared-memory rounds carry every size (STRATA_SHM_PLACEMENT=far reads "
                "peers' buffers directly instead)",
                v.round_trip_ns, v.farthest, kNearRoundTripNs);
    else
      util::log(util::LogLevel::info,
                "local ranks sit far from each other ({}; near means <= {:.0f} ns): large messages read peers' "
                "buffers directly (STRATA_SHM_PLACEMENT=near keeps them in the shared-memory rounds)",
                v.round_trip_ns > 0 ? fmt::format("cache-line round trip {:.0f} ns with local rank {}", v.round_trip_ns,
                                                  v.farthest)
                                    : fmt::format("local rank {} did not answer the measurement in time", v.farthest),
                kNearRoundTripNs);
  });
}

}  // namespace

Placement placement_from_environment() {
  static const Placement placement = [] {
    constexpr Placement given[] = {Placement::near, Placement::far};
    const int word = util::env_word("STRATA_SHM_PLACEMENT", {"near", "far"});
    return word < 0 ? Placement::unmeasured : given[word];
  }();
  return placement;
}

PlacementVerdict measure_placement(MPI_Comm node_comm, int local_rank,
                                   std::span<std::atomic<std::uint64_t>* const, 2> lines) {
  lines[static_cast<std::size_t>(local_rank)]->store(0, std::memory_order_relaxed);
  STRATA_CHECK_MPI(MPI_Barrier(node_comm));  // both lines zeroed before either is polled
  // Local rank 0's round trip in ns, 0 when local rank 1 did not answer.
  double round_trip = 0;
  if (local_rank == 0) round_trip = std::max(0.0, time_pair(*lines[0], *lines[1], kAtCreation));
  else echo_pair(*lines[1], *lines[0]);
  STRATA_CHECK_MPI(MPI_Bcast(&round_trip, 1, MPI_DOUBLE, 0, node_comm));
  const bool near = round_trip > 0 && round_trip <= kNearRoundTripNs;
  const PlacementVerdict verdict{near ? Placement::near : Placement::far, round_trip, 1};
  log_verdict(verdict);
  remember(verdict);
  return verdict;
}

std::optional<PlacementVerdict> recheck_placement(Transport& t, int local_rank, const RecheckLines& lines,
                                                  std::uint64_t epoch, Placement current) {
  std::atomic<std::uint64_t>& verdict = *lines.verdict;
  Word word = Word::keep;
  double round_trip = 0;
  if (local_rank == 0) {
    round_trip = time_pair(*lines.probe[0], *lines.probe[1], kAtRecheck, epoch);
    if (round_trip > 0) {
      const PlacementRule rule = recheck_rule.load(std::memory_order_relaxed);
      const Placement p = rule ? rule(round_trip, epoch) : round_trip <= kNearRoundTripNs ? Placement::near : Placement::far;
      word = p == Placement::near ? Word::near : Word::far;
    }
    // Written whatever happened: local rank 1 waits for it once it echoed
    // every exchange, and stops echoing when it sees it early.
    verdict.store(verdict_word(epoch, word), std::memory_order_release);
  } else {
    const auto answered = [&] { return epoch_of(verdict.load(std::memory_order_acquire)) == epoch; };
    // Local rank 0 cannot finish without every echo: a rank that stopped
    // echoing keeps the verdict, and so does local rank 0.
    if (!echo_pair(*lines.probe[1], *lines.probe[0], kAtRecheck, epoch, answered) && !answered()) return std::nullopt;
    util::Backoff backoff;
    while (!answered()) {
      if (t.expired()) {
        const int waiting_for[] = {0};
        t.idle(backoff, waiting_for);  // throws DeadlineExceeded naming local rank 0
      }
      backoff.pause();
    }
    word = word_of(verdict.load(std::memory_order_acquire));
  }
  if (word == Word::keep) return std::nullopt;
  const PlacementVerdict fresh{word == Word::near ? Placement::near : Placement::far, round_trip, 1};
  remember(fresh);
  if (fresh.placement != current && local_rank == 0) log_change(fresh, epoch);
  return fresh;
}

void set_recheck_for_testing(std::uint64_t every_calls, PlacementRule rule) {
  recheck_every.store(every_calls ? every_calls : kRecheckEveryCalls, std::memory_order_relaxed);
  recheck_rule.store(rule, std::memory_order_relaxed);
}

std::uint64_t recheck_every_calls() { return recheck_every.load(std::memory_order_relaxed); }

PlacementVerdict last_measured_placement() {
  const std::lock_guard<std::mutex> lock(last_mutex);
  return last;
}

}  // namespace strata::host::shm
