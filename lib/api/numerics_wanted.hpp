// Which numerics a rank asks for when a communicator is made: Config's
// reproducible and accumulate_f32, or the environment's STRATA_REPRODUCIBLE
// and STRATA_ACCUMULATE. The ranks agree on it in agree_on_call_check.
// Internal header.
#pragma once

#include "plan/numerics.hpp"
#include "strata/options.hpp"

namespace strata::api {

// Config::reproducible when non-empty, else STRATA_REPRODUCIBLE, else off;
// accumulate_f32 from Config or STRATA_ACCUMULATE=f32 (`native` or unset:
// Config's). Throws InvalidArgument naming the field or variable for any
// other value.
plan::Numerics numerics_wanted(const Config& config);

}  // namespace strata::api
