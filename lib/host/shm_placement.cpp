#include "host/shm_placement.hpp"

#include <sched.h>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "util/check.hpp"
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

std::mutex last_mutex;
PlacementVerdict last;

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

// Local rank 0's side: the round trip in ns, or a negative number when
// the peer did not answer within kPairBudget. Exchange i writes i, and the
// peer echoes it.
double time_pair(std::atomic<std::uint64_t>& mine, const std::atomic<std::uint64_t>& theirs) {
  const Clock::time_point until = Clock::now() + kPairBudget;
  double best = -1;
  int i = 0;
  auto exchange = [&] {
    ++i;
    mine.store(static_cast<std::uint64_t>(i), std::memory_order_release);
    return wait_for(theirs, [&](std::uint64_t v) { return v == static_cast<std::uint64_t>(i); }, until);
  };
  for (int w = 0; w < kWarmup; ++w)
    if (!exchange()) return -1;
  for (int b = 0; b < kBatches; ++b) {
    const Clock::time_point start = Clock::now();
    for (int k = 0; k < kPerBatch; ++k)
      if (!exchange()) return -1;
    const double ns = std::chrono::duration<double, std::nano>(Clock::now() - start).count() / kPerBatch;
    best = best < 0 ? ns : std::min(best, ns);
  }
  return best;
}

// Local rank 1's side: echo every exchange number until the last, or
// until local rank 0 stops sending them.
void echo_pair(std::atomic<std::uint64_t>& mine, const std::atomic<std::uint64_t>& zeros) {
  const int total = kWarmup + kBatches * kPerBatch;
  for (int i = 1; i <= total; ++i) {
    const auto value = static_cast<std::uint64_t>(i);
    if (!wait_for(zeros, [&](std::uint64_t v) { return v == value; }, Clock::now() + kPairBudget)) return;
    mine.store(value, std::memory_order_release);
  }
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
    const char* env = std::getenv("STRATA_SHM_PLACEMENT");
    if (env && std::strcmp(env, "near") == 0) return Placement::near;
    if (env && std::strcmp(env, "far") == 0) return Placement::far;
    if (env && *env && std::strcmp(env, "auto") != 0)
      util::log(util::LogLevel::warn, "STRATA_SHM_PLACEMENT='{}' is not near, far or auto: measured instead", env);
    return Placement::unmeasured;
  }();
  return placement;
}

PlacementVerdict measure_placement(MPI_Comm node_comm, int local_rank,
                                   std::span<std::atomic<std::uint64_t>* const, 2> lines) {
  lines[static_cast<std::size_t>(local_rank)]->store(0, std::memory_order_relaxed);
  STRATA_CHECK_MPI(MPI_Barrier(node_comm));  // both lines zeroed before either is polled
  // Local rank 0's round trip in ns, 0 when local rank 1 did not answer.
  double round_trip = 0;
  if (local_rank == 0) round_trip = std::max(0.0, time_pair(*lines[0], *lines[1]));
  else echo_pair(*lines[1], *lines[0]);
  STRATA_CHECK_MPI(MPI_Bcast(&round_trip, 1, MPI_DOUBLE, 0, node_comm));
  const bool near = round_trip > 0 && round_trip <= kNearRoundTripNs;
  const PlacementVerdict verdict{near ? Placement::near : Placement::far, round_trip, 1};
  log_verdict(verdict);
  {
    const std::lock_guard<std::mutex> lock(last_mutex);
    last = verdict;
  }
  return verdict;
}

PlacementVerdict last_measured_placement() {
  const std::lock_guard<std::mutex> lock(last_mutex);
  return last;
}

}  // namespace strata::host::shm
