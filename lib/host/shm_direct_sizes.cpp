#include "host/shm_direct_sizes.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <mutex>
#include <string>
#include <vector>

#include "host/cma.hpp"
#include "util/check.hpp"
#include "util/env_word.hpp"
#include "util/log.hpp"

namespace strata::host::shm::direct {
namespace {

using Clock = std::chrono::steady_clock;

std::mutex last_mutex;
ReadVerdict last;

void remember(const ReadVerdict& verdict) {
  const std::lock_guard<std::mutex> lock(last_mutex);
  last = verdict;
}

// Local rank 0's side: the fastest read in ns, or -1 when one failed.
double time_reads(pid_t peer_pid, const void* remote) {
  std::vector<std::byte> local(kProbeBytes);
  double best = -1;
  for (int i = 0; i < kProbeWarmup + kProbeReads; ++i) {
    const Clock::time_point start = Clock::now();
    if (cma::try_read(peer_pid, remote, local.data(), local.size()) != 0) return -1;
    const double ns = std::chrono::duration<double, std::nano>(Clock::now() - start).count();
    if (i >= kProbeWarmup) best = best < 0 ? ns : std::min(best, ns);
  }
  return best;
}

std::string describe(const Range& r) {
  return r.up_to == SIZE_MAX ? fmt::format("from {} KiB", r.from / 1024)
                             : fmt::format("from {} KiB to {} KiB", r.from / 1024, r.up_to / 1024);
}
std::string describe(const Sizes& s) {
  return fmt::format("broadcast {}, reduce {}, all-reduce {}, all-gather {}", describe(s.broadcast),
                     describe(s.reduce), describe(s.all_reduce), describe(s.all_gather));
}

void log_verdict(const ReadVerdict& v, bool given) {
  static std::once_flag once;
  std::call_once(once, [&] {
    const std::string measured =
        given ? fmt::format("STRATA_CMA_READS={}", v.cost == ReadCost::cheap ? "cheap" : "dear")
        : v.read_ns < 0
            ? std::string("a timed read failed")
            : fmt::format("a {}-byte read of local rank 1 takes {:.0f} ns; cheap means <= {:.0f} ns", kProbeBytes,
                          v.read_ns, kCheapReadNs);
    util::log(util::LogLevel::info, "cross-memory reads are {} here ({}): where the ranks read directly, {}",
              v.cost == ReadCost::cheap ? "cheap" : "dear", measured, describe(sizes_for(v.cost)));
  });
}

}  // namespace

const Sizes& sizes_for(ReadCost cost) { return cost == ReadCost::cheap ? kCheapReads : kDearReads; }

ReadCost read_cost_for(double read_ns) {
  return read_ns > 0 && read_ns <= kCheapReadNs ? ReadCost::cheap : ReadCost::dear;
}

ReadCost read_cost_from_environment() {
  static const ReadCost cost = [] {
    constexpr ReadCost given[] = {ReadCost::cheap, ReadCost::dear};
    const int word = util::env_word("STRATA_CMA_READS", {"cheap", "dear"});
    return word < 0 ? ReadCost::unmeasured : given[word];
  }();
  return cost;
}

ReadVerdict measure_read_cost(MPI_Comm node_comm, int local_rank, pid_t peer_pid, const void* remote) {
  const ReadCost given = read_cost_from_environment();
  ReadVerdict verdict{given, 0};
  if (given == ReadCost::unmeasured) {
    double read_ns = local_rank == 0 ? time_reads(peer_pid, remote) : 0;
    // Local rank 1's memory is read until this returns on local rank 0.
    STRATA_CHECK_MPI(MPI_Bcast(&read_ns, 1, MPI_DOUBLE, 0, node_comm));
    verdict = {read_cost_for(read_ns), read_ns};
  }
  log_verdict(verdict, given != ReadCost::unmeasured);
  remember(verdict);
  return verdict;
}

ReadVerdict last_read_verdict() {
  const std::lock_guard<std::mutex> lock(last_mutex);
  return last;
}

}  // namespace strata::host::shm::direct
