// Deadlines and polite waiting. strata never parks a thread per call: a rank
// waits by polling its non-blocking operations, backing off so that
// oversubscribed runs (8 ranks on 2 cores) are not starved by spinning peers.
#pragma once

#include <chrono>

namespace strata::util {

class Deadline {
 public:
  using Clock = std::chrono::steady_clock;

  // `seconds` <= 0 means no deadline. Callers validate the value first.
  explicit Deadline(double seconds = 0);

  bool bounded() const { return bounded_; }
  bool expired() const { return bounded_ && Clock::now() >= at_; }
  double seconds() const { return seconds_; }

 private:
  bool bounded_;
  double seconds_;
  Clock::time_point at_;
};

// Call pause() each time a poll finds nothing to do: it spins briefly (for
// latency), then yields the core, then sleeps for growing intervals capped
// at 50 us. reset() after progress.
class Backoff {
 public:
  void pause();
  void reset() { idle_polls_ = 0; }

 private:
  unsigned idle_polls_ = 0;
};

}  // namespace strata::util
