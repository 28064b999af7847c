// Whole numbers on the apps' command lines (strata-bench -n/-w/-r/..., and
// strata-gpu-kernels --iters): an optional '-' and decimal digits, nothing
// else (no '+', space, fraction, exponent or hex). One parser, so every app
// accepts and refuses the same text; Boost's own conversion would read "-2"
// into an unsigned as 2^64 - 2.
#pragma once

#include <optional>
#include <string_view>

namespace strata_apps {

// The integer `text` spells when it is one and lies in [lo, hi]; else
// nullopt (the app says why in its usage message). Never throws.
std::optional<long long> parse_integer(std::string_view text, long long lo, long long hi);

}  // namespace strata_apps
