// STRATA_DEBUG-controlled logging to stderr: NONE, WARN (default), INFO, TRACE.
#pragma once

#include <fmt/format.h>

#include <string_view>

namespace strata::util {

enum class LogLevel { none = 0, warn = 1, info = 2, trace = 3 };

// The level from STRATA_DEBUG, read once (at load time); unknown values mean
// WARN. The one reading: the interposer logs under it too.
LogLevel log_level();

// Prints "strata <LEVEL> [host:rank] message" when `level` is enabled.
void log_line(LogLevel level, std::string_view message);

namespace detail {
extern const LogLevel enabled_level;  // log_level(), kept where an inline test can read it

template <typename... Args>
[[gnu::noinline, gnu::cold]] void log_formatted(LogLevel level, fmt::format_string<Args...> format, Args&&... args) {
  log_line(level, fmt::format(format, std::forward<Args>(args)...));
}
}  // namespace detail

// Logs when `level` is enabled. The test is inline and the formatting out of
// line: calls at TRACE sit on the latency path, where nothing should be
// spent while tracing is off.
template <typename... Args>
inline void log(LogLevel level, fmt::format_string<Args...> format, Args&&... args) {
  if (detail::enabled_level >= level) [[unlikely]]
    detail::log_formatted(level, format, std::forward<Args>(args)...);
}

}  // namespace strata::util
