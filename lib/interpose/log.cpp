#include "log.hpp"

#include <mpi.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>

namespace strata::interpose {
namespace {

std::string where() {
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0) fmt::format_to_n(host, sizeof host - 1, "unknown-host");
  int initialized = 0, finalized = 0, rank = -1;
  PMPI_Initialized(&initialized);
  PMPI_Finalized(&finalized);
  if (initialized && !finalized) PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank < 0 ? fmt::format("{}:?", host) : fmt::format("{}:{}", host, rank);
}

std::mutex& seen_lock() {
  static std::mutex* lock = new std::mutex;  // never destroyed: used until exit
  return *lock;
}

}  // namespace

Level log_level() noexcept {
  static const Level level = [] {
    const char* env = std::getenv("STRATA_DEBUG");
    const std::string_view value = env ? env : "WARN";
    if (value == "NONE") return Level::none;
    if (value == "INFO") return Level::info;
    if (value == "TRACE") return Level::trace;
    return Level::warn;
  }();
  return level;
}

void log_line(Level level, std::string_view message) noexcept {
  if (!logging(level)) return;
  static constexpr const char* kNames[] = {"NONE", "WARN", "INFO", "TRACE"};
  try {
    const std::string line =
        fmt::format("strata {} [{}] strata-mpi: {}\n", kNames[static_cast<int>(level)], where(), message);
    std::fputs(line.c_str(), stderr);  // one call per line: lines of different ranks do not interleave
  } catch (...) {
    // Logging must never turn a working MPI call into a failing one.
  }
}

void log_decision(std::set<std::string>& seen, const std::string& message) noexcept {
  if (logging(Level::trace)) return log_line(Level::trace, message);
  if (!logging(Level::info)) return;
  try {
    std::lock_guard lock(seen_lock());
    if (!seen.insert(message).second) return;
  } catch (...) {
    return;
  }
  log_line(Level::info, message);
}

}  // namespace strata::interpose
