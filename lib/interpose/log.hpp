// The interposer's log lines, in the library's format and under the
// library's STRATA_DEBUG (util/log.hpp reads it, once, for both):
//   strata <LEVEL> [host:rank] strata-mpi: <message>
// on stderr. INFO prints each routing decision once per process, so that
// logs stay small however many calls a program makes and however often it
// makes a communicator again (a decision names its communicator by a label
// that is the same for the same ranks: comm_cache.hpp); TRACE prints every
// decision.
#pragma once

#include <string>
#include <string_view>

#include "util/log.hpp"

namespace strata::interpose {

using Level = util::LogLevel;

inline bool logging(Level level) noexcept { return util::log_level() >= level; }

// Prints "strata-mpi: `message`" at `level` if it is enabled. Never throws.
void say(Level level, std::string_view message) noexcept;

// A routing decision: at TRACE printed every time; at INFO printed only the
// first time this process sees `message`. Thread-safe (one lock, taken only
// when INFO is on). Never throws.
void log_decision(const std::string& message) noexcept;

}  // namespace strata::interpose
