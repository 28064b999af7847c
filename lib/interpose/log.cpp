#include "log.hpp"

#include <fmt/format.h>

#include <mutex>
#include <set>

namespace strata::interpose {
namespace {

// The decisions printed at INFO so far, and their lock. Never destroyed:
// used until exit.
struct Seen {
  std::mutex lock;
  std::set<std::string> messages;
};
Seen& seen() {
  static Seen* instance = new Seen;
  return *instance;
}

}  // namespace

void say(Level level, std::string_view message) noexcept {
  if (!logging(level)) return;
  try {
    util::log_line(level, fmt::format("strata-mpi: {}", message));
  } catch (...) {
    // Logging must never turn a working MPI call into a failing one.
  }
}

void log_decision(const std::string& message) noexcept {
  if (logging(Level::trace)) return say(Level::trace, message);
  if (!logging(Level::info)) return;
  try {
    std::lock_guard lock(seen().lock);
    if (!seen().messages.insert(message).second) return;
  } catch (...) {
    return;
  }
  say(Level::info, message);
}

}  // namespace strata::interpose
