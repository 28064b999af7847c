#include "harness_watchdog.hpp"

#include <cstdio>
#include <cstdlib>

namespace strata::test {

int watchdog_seconds(int fallback) {
  const char* env = std::getenv("STRATA_TEST_WATCHDOG_S");
  const int value = env ? std::atoi(env) : 0;
  return value > 0 ? value : fallback;
}

Watchdog::Watchdog(int seconds, int rank) : seconds_(seconds), rank_(rank), thread_([this] { run(); }) {}

Watchdog::~Watchdog() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void Watchdog::arm(std::string what) {
  std::lock_guard lock(mutex_);
  what_ = std::move(what);
  deadline_ = std::chrono::steady_clock::now() + std::chrono::seconds(seconds_);
  armed_ = true;
  cv_.notify_all();
}

void Watchdog::disarm() {
  std::lock_guard lock(mutex_);
  armed_ = false;
  cv_.notify_all();
}

void Watchdog::run() {
  std::unique_lock lock(mutex_);
  while (!stop_) {
    if (!armed_) {
      cv_.wait(lock);
      continue;
    }
    if (cv_.wait_until(lock, deadline_) == std::cv_status::timeout && armed_ && !stop_ &&
        std::chrono::steady_clock::now() >= deadline_) {
      std::fprintf(stderr, "strata-test HANG: %s on rank %d exceeded %d s\n", what_.c_str(), rank_, seconds_);
      std::fflush(stderr);
      std::fflush(stdout);
      std::_Exit(124);
    }
  }
}

}  // namespace strata::test
