// The interposer's log lines, in the library's format:
//   strata <LEVEL> [host:rank] strata-mpi: <message>
// on stderr. STRATA_DEBUG (NONE, WARN = default, INFO, TRACE) is read here
// with the same meaning the library gives it: INFO prints each routing
// decision once per communicator and kind (so that logs stay small however
// many calls a program makes), TRACE prints every decision.
#pragma once

#include <set>
#include <string>
#include <string_view>

namespace strata::interpose {

enum class Level { none = 0, warn = 1, info = 2, trace = 3 };

// The level from STRATA_DEBUG, read once. Unknown values mean WARN, as in
// the library.
Level log_level() noexcept;

inline bool logging(Level level) noexcept { return log_level() >= level; }

// Prints one line at `level` if it is enabled. Never throws.
void log_line(Level level, std::string_view message) noexcept;

// A routing decision: at TRACE printed every time; at INFO printed only the
// first time `message` is seen in `seen` (one set per communicator). Thread-
// safe (one lock, taken only when INFO or TRACE is on). Never throws.
void log_decision(std::set<std::string>& seen, const std::string& message) noexcept;

}  // namespace strata::interpose
