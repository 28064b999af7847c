#include "util/deadline.hpp"

#include <sched.h>
#include <time.h>

#include <algorithm>
#include <atomic>

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
  // yielded on most calls and took 0.29-0.35 us in a tight loop, with these
  // 0.14-0.16 us (docs/PERFORMANCE.md). Oversubscribed runs (more ranks than
  // cores) then yield after those 7 us, as before.
  //
  // Where ranks share cores a spinning rank only delays the peer it waits
  // for (that peer may be queued behind it on the same core): a few polls,
  // then yield, and keep yielding far longer before sleeping, since a
  // sleep's wake-up costs tens of microseconds (timer slack) while a yield
  // returns at once when nobody else wants the core.
  constexpr unsigned kSpins = 256, kYields = 256, kWorkEvery = 16;
  constexpr unsigned kSharedSpins = 8, kSharedYields = 4096;
  const bool shared = shared_cores.load(std::memory_order_relaxed);
  const unsigned spins = shared ? kSharedSpins : kSpins, yields = shared ? kSharedYields : kYields;
  ++idle_polls_;
  if (idle_polls_ <= spins) {
    cpu_relax();
    return;
  }
  if (idle_work && idle_polls_ % kWorkEvery == 0) idle_work->run();
  if (idle_polls_ <= spins + yields) {
    sched_yield();
    return;
  }
  const long ns = std::min<long>(50'000, 1'000L * (idle_polls_ - spins - yields));
  const timespec ts{0, ns};
  nanosleep(&ts, nullptr);
}

}  // namespace strata::util
