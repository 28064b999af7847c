#include "util/deadline.hpp"

#include <sched.h>
#include <time.h>

#include <algorithm>
#include <atomic>

#include "util/trace.hpp"

namespace strata::util {

namespace {

// steady_clock counts nanoseconds in 64 bits (about 292 years from its
// epoch): a deadline further out than this would overflow into the past.
constexpr double kLongestSeconds = 1e9;  // about 31.7 years

Deadline::Clock::time_point at(double seconds) {
  const double bounded = std::min(seconds, kLongestSeconds);
  return Deadline::Clock::now() +
         std::chrono::duration_cast<Deadline::Clock::duration>(std::chrono::duration<double>(bounded));
}

}  // namespace

Deadline::Deadline(double seconds)
    : bounded_(seconds > 0), seconds_(seconds), at_(bounded_ ? at(seconds) : Clock::time_point::max()) {}

namespace {
// initial-exec: a plain %fs-relative access, no __tls_get_addr call on the
// latency path (two accesses per call); one pointer fits the static TLS
// surplus glibc keeps for libraries loaded later (the Python module).
[[gnu::tls_model("initial-exec")]] thread_local IdleWork* idle_work = nullptr;  // the running call's
}  // namespace

IdleWorkScope::IdleWorkScope(IdleWork* work) : previous_(idle_work) { idle_work = work; }
IdleWorkScope::~IdleWorkScope() { idle_work = previous_; }

namespace {

// One polite spin: tells the core this is a wait loop (less power, no
// memory-order mis-speculation when the awaited line changes).
inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

}  // namespace

namespace {
std::atomic<bool> shared_cores{false};
}  // namespace

void set_cores_shared(bool shared) {
  if (shared) shared_cores.store(true, std::memory_order_relaxed);
}
bool cores_shared() { return shared_cores.load(std::memory_order_relaxed); }

void Backoff::pause() {
  // Spin first: a peer in the same call usually arrives within a few
  // microseconds, and a sched_yield costs a system call (a few hundred ns on
  // a VM, as much as a whole small all-reduce). 256 pauses are about 7 us on
  // a current x86 core (measured: 27 ns each on this project's AMD EPYC VM);
  // with 64 unpaused polls (about 0.1 us) the 8 B all-reduce at 2 ranks
  // yielded on most calls and took 0.28-0.35 us in a tight loop, with these
  // 0.14-0.16 us (docs/PERFORMANCE.md, "Cost of the call check"). Oversubscribed runs (more ranks than
  // cores) then yield after those 7 us, as before.
  //
  // Where ranks share cores a spinning rank only delays the peer it waits
  // for (that peer may be queued behind it on the same core): a few polls,
  // then yield, and keep yielding far longer before sleeping, since a
  // sleep's wake-up costs tens of microseconds (timer slack) while a yield
  // returns at once when nobody else wants the core.
  //
  // A wait for peers' reads of this rank's memory (Patience::peer_reads)
  // spins about 450 us first, the time of a 4 MiB read at 9 GB/s: a yield
  // meanwhile slows the read itself (docs/ALGORITHMS.md, "Where the direct
  // path starts").
  constexpr unsigned kSpins = 256, kYields = 256, kWorkEvery = 16, kPeerReadSpins = 16384;
  constexpr unsigned kSharedSpins = 8, kSharedYields = 4096;
  const bool shared = shared_cores.load(std::memory_order_relaxed);
  const unsigned spins = shared ? kSharedSpins : peer_reads_ ? kPeerReadSpins : kSpins,
                 yields = shared ? kSharedYields : kYields;
  ++idle_polls_;
  if (idle_polls_ == 1 && trace::enabled() && waiting_since_ns_ == 0) [[unlikely]]
    begin_traced_wait();
  if (idle_polls_ <= spins) {
    cpu_relax();
    return;
  }
  if (idle_work && idle_polls_ % kWorkEvery == 0) idle_work->run();
  if (idle_polls_ <= spins + yields || (device_ && !shared)) {
    sched_yield();
    return;
  }
  const long ns = std::min<long>(50'000, 1'000L * (idle_polls_ - spins - yields));
  const timespec ts{0, ns};
  nanosleep(&ts, nullptr);
}

void Backoff::begin_traced_wait() { waiting_since_ns_ = trace::now_ns(); }

void Backoff::note_peers(std::span<const int> peers, MPI_Comm comm) {
  peers_noted_ = true;
  comm_ = comm;
  peers_total_ = peers.size();
  peer_count_ = 0;
  for (const int p : peers)
    if (peer_count_ < kMaxPeers && std::find(peers_, peers_ + peer_count_, p) == peers_ + peer_count_)
      peers_[peer_count_++] = p;
  std::sort(peers_, peers_ + peer_count_);
}

void Backoff::end_traced_wait() {
  const std::int64_t end = trace::now_ns();
  if (end - waiting_since_ns_ < trace::kWaitThresholdNs) return;
  trace::Args args;
  int finalized = 1;
  MPI_Finalized(&finalized);
  if (peers_noted_ && !finalized && comm_ != MPI_COMM_NULL) {
    // Only now, for a wait worth a span: the world ranks of the peers.
    int world[kMaxPeers];
    MPI_Group group = MPI_GROUP_NULL, world_group = MPI_GROUP_NULL;
    MPI_Comm_group(comm_, &group);
    MPI_Comm_group(MPI_COMM_WORLD, &world_group);
    MPI_Group_translate_ranks(group, peer_count_, peers_, world_group, world);
    MPI_Group_free(&group);
    MPI_Group_free(&world_group);
    args.add("peers", std::span<const int>(world, peer_count_));
  } else {
    args.add("peers", "unknown (inside an MPI collective)");
  }
  args.add("polls", std::uint64_t(idle_polls_));
  trace::record("wait", waiting_since_ns_, end, std::move(args).take());
}

}  // namespace strata::util
