#include "util/log.hpp"

#include <cstdio>
#include <cstdlib>
#include <string>

#include "util/where.hpp"

namespace strata::util {

LogLevel log_level() {
  static const LogLevel level = [] {
    const char* env = std::getenv("STRATA_DEBUG");
    const std::string value = env ? env : "WARN";
    if (value == "NONE") return LogLevel::none;
    if (value == "INFO") return LogLevel::info;
    if (value == "TRACE") return LogLevel::trace;
    return LogLevel::warn;
  }();
  return level;
}

namespace detail {
const LogLevel enabled_level = log_level();
}  // namespace detail

void log_line(LogLevel level, std::string_view message) {
  static constexpr const char* kNames[] = {"NONE", "WARN", "INFO", "TRACE"};
  const std::string line =
      fmt::format("strata {} [{}] {}\n", kNames[static_cast<int>(level)], where(), message);
  std::fputs(line.c_str(), stderr);
}

}  // namespace strata::util
