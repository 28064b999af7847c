#include "report.hpp"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>

#include "settings.hpp"

namespace gpu_double {
namespace {

std::atomic<int> counted{0};

void say(const std::string& line) {
  const std::string text = line + "\n";
  // One write: lines of concurrent threads and processes do not interleave.
  [[maybe_unused]] const ssize_t n = ::write(2, text.data(), text.size());
}

// Registered when the library loads, before any user of it: runs last.
void exit_with_violations() {
  if (counted.load() == 0) return;
  say(fmt::format("strata test double [{}]: {} violation(s) in this process (see above); exiting with status {}",
                  who(), counted.load(), kViolationExitStatus));
  std::fflush(nullptr);
  ::_exit(kViolationExitStatus);
}

[[gnu::constructor]] void register_exit_check() { std::atexit(exit_with_violations); }

}  // namespace

std::string who() { return fmt::format("rank {} pid {}", settings().world_rank, ::getpid()); }

void violation(const char* call, const std::string& what) {
  // The first ones in full; a loop repeating one mistake would bury the rest.
  constexpr int kPrinted = 20;
  const int n = ++counted;
  if (n <= kPrinted) say(fmt::format("strata test double [{}]: VIOLATION in {}: {}", who(), call, what));
  if (n == kPrinted) say(fmt::format("strata test double [{}]: further violations are counted, not printed", who()));
}

void fatal(const char* call, const std::string& what) {
  ++counted;
  say(fmt::format("strata test double [{}]: FATAL in {}: {} (a real GPU would hang here; aborting)", who(), call,
                  what));
  std::abort();
}

void trace(const std::string& what) {
  if (settings().trace) say(fmt::format("strata test double [{}]: {}", who(), what));
}

int violations() { return counted.load(); }

}  // namespace gpu_double
