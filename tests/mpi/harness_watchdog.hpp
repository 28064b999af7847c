// The harness's bound on a hang (part of the harness core,
// harness_core.hpp): a thread that ends the process when what it watches
// runs past its bound, printing
//   strata-test HANG: <what> on rank <r> exceeded <N> s
// and exiting 124, so that a hung MPI test fails at once, saying where,
// instead of eating its meson timeout. It never calls MPI (a program may
// have only MPI_THREAD_FUNNELED), so it works under any thread level and
// under the interposer.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

namespace strata::test {

// STRATA_TEST_WATCHDOG_S when it holds a positive number (the meson files
// set it per test), else `fallback`.
int watchdog_seconds(int fallback);

class Watchdog {
 public:
  // Starts the thread, armed for nothing. `rank` names this process in the
  // HANG line.
  Watchdog(int seconds, int rank);
  // Stops the thread (whatever is armed is no longer watched).
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  // Watches `what` ("test 'x'", "program 'y'") for a full bound from now,
  // replacing whatever was armed.
  void arm(std::string what);
  // Watches nothing until the next arm.
  void disarm();
  int seconds() const { return seconds_; }

 private:
  void run();

  const int seconds_;
  const int rank_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::string what_;
  std::chrono::steady_clock::time_point deadline_;
  bool armed_ = false, stop_ = false;
  std::thread thread_;
};

}  // namespace strata::test
