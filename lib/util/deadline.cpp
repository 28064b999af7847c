#include "util/deadline.hpp"

#include <sched.h>
#include <time.h>

#include <algorithm>

namespace strata::util {

Deadline::Deadline(double seconds)
    : bounded_(seconds > 0),
      seconds_(seconds),
      at_(bounded_ ? Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds))
                   : Clock::time_point::max()) {}

void Backoff::pause() {
  // Spin a little first: a small message usually lands within microseconds.
  constexpr unsigned kSpins = 64, kYields = 256;
  ++idle_polls_;
  if (idle_polls_ <= kSpins) return;
  if (idle_polls_ <= kSpins + kYields) {
    sched_yield();
    return;
  }
  const long ns = std::min<long>(50'000, 1'000L * (idle_polls_ - kSpins - kYields));
  const timespec ts{0, ns};
  nanosleep(&ts, nullptr);
}

}  // namespace strata::util
