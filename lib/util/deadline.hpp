// Deadlines and polite waiting. strata never parks a thread per call: a rank
// waits by polling its non-blocking operations, backing off so that
// oversubscribed runs (8 ranks on 2 cores) are not starved by spinning peers.
#pragma once

#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <span>

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

//
// With STRATA_TRACE on, a wait that paused (a poll found nothing) and lasted
// longer than trace::kWaitThresholdNs becomes a "wait" span, ending when the
// Backoff is destroyed, naming the peers its owner noted (note_peers). Off,
// that costs the destructor one branch on a member that stays zero.
class Backoff {
 public:
  // What the wait is for. `peers`: other ranks, which may need this very
  // core (the sleeps above). `device`: the GPU, which needs no core of the
  // host: while the rank has its core to itself a wait never sleeps (a
  // sleep's wake-up costs tens of microseconds of timer slack, and would
  // notice the end of a long kernel that late); it yields instead.
  // `peer_reads`: peers reading this rank's memory with system calls (the
  // shared-memory direct path's reads): they need no core of this rank's,
  // and while the rank has its core to itself the wait spins far longer
  // before it yields (on the AMD EPYC VM a root yielding while its peer
  // read 1 MiB of its buffer made that read take 123 us instead of 46).
  enum class Patience { peers, device, peer_reads };

  Backoff() = default;
  explicit Backoff(Patience patience)
      : device_(patience == Patience::device), peer_reads_(patience == Patience::peer_reads) {}
  ~Backoff() {
    if (waiting_since_ns_ != 0) [[unlikely]] end_traced_wait();
  }
  Backoff(const Backoff&) = delete;
  Backoff& operator=(const Backoff&) = delete;

  void pause();
  void reset() { idle_polls_ = 0; }

  // True once, right after the first pause of a traced wait: then the owner
  // may name whom it waits for (note_peers), off the latency path.
  bool wants_peers() const { return waiting_since_ns_ != 0 && !peers_noted_; }
  // `peers`: ranks of `comm` (the span names them as MPI_COMM_WORLD ranks;
  // at most kMaxPeers distinct ones are kept).
  void note_peers(std::span<const int> peers, MPI_Comm comm);

  static constexpr std::size_t kMaxPeers = 16;

 private:
  [[gnu::cold]] void begin_traced_wait();
  [[gnu::cold]] void end_traced_wait();

  unsigned idle_polls_ = 0;
  bool device_ = false;                // Patience::device
  bool peer_reads_ = false;            // Patience::peer_reads
  std::int64_t waiting_since_ns_ = 0;  // traced waits only
  bool peers_noted_ = false;
  unsigned char peer_count_ = 0;
  std::size_t peers_total_ = 0;
  MPI_Comm comm_ = MPI_COMM_NULL;
  int peers_[kMaxPeers];  // left uninitialised: only traced waits write it
};

}  // namespace strata::util
