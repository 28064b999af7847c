// Deadlines and polite waiting. strata never parks a thread per call: a rank
// waits by polling its non-blocking operations, backing off so that
// oversubscribed runs (8 ranks on 2 cores) are not starved by spinning peers.
#pragma once

#include <chrono>

namespace strata::util {

class Deadline {
 public:
  using Clock = std::chrono::steady_clock;

  // `seconds` <= 0 means no deadline. Callers validate the value first
  // (finite, not NaN). More than 1e9 s (~31 years) counts as 1e9 s, so an
  // absurdly long timeout never overflows the clock into an instant expiry.
  explicit Deadline(double seconds = 0);

  bool bounded() const { return bounded_; }
  bool expired() const { return bounded_ && Clock::now() >= at_; }
  double seconds() const { return seconds_; }

 private:
  bool bounded_;
  double seconds_;
  Clock::time_point at_;
};

// Work a waiting rank does on the side while strata waits for its peers
// (answering a peer's roll call after a timeout, lib/exec/roll_call.hpp).
// The running call installs it for its thread (IdleWorkScope); Backoff
// runs it now and then once a wait stops being short.
class IdleWork {
 public:
  virtual void run() = 0;

 protected:
  ~IdleWork() = default;
};

// Installs `work` for the calling thread for the scope's lifetime (nests).
class IdleWorkScope {
 public:
  explicit IdleWorkScope(IdleWork* work);
  ~IdleWorkScope();
  IdleWorkScope(const IdleWorkScope&) = delete;
  IdleWorkScope& operator=(const IdleWorkScope&) = delete;

 private:
  IdleWork* previous_;
};

// Call pause() each time a poll finds nothing to do: it spins briefly (for
// latency), then yields the core, then sleeps for growing intervals capped
// at 50 us, running the thread's IdleWork every few pauses past the spins.
// reset() after progress. How long it spins and yields depends on whether
// ranks share cores (set_cores_shared).
// Tells every later wait of this process whether its ranks outnumber the
// cores they may run on (topo::cores_shared, decided when a communicator is
// made). Then a waiting rank yields its core after a handful of polls
// instead of spinning for microseconds: the peer it waits for may need that
// very core. Once set it stays set for the process (a later communicator
// over fewer ranks does not make the cores its own).
void set_cores_shared(bool shared);
bool cores_shared();

class Backoff {
 public:
  void pause();
  void reset() { idle_polls_ = 0; }

 private:
  unsigned idle_polls_ = 0;
};

}  // namespace strata::util
