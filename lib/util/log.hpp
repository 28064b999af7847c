// STRATA_DEBUG-controlled logging to stderr: NONE, WARN (default), INFO, TRACE.
#pragma once

#include <fmt/format.h>

#include <string_view>

namespace strata::util {

enum class LogLevel { none = 0, warn = 1, info = 2, trace = 3 };

// The level from STRATA_DEBUG, read once.
LogLevel log_level();

// Prints "strata <LEVEL> [host:rank] message" when `level` is enabled.
void log_line(LogLevel level, std::string_view message);

template <typename... Args>
void log(LogLevel level, fmt::format_string<Args...> format, Args&&... args) {
  if (log_level() >= level) log_line(level, fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace strata::util
