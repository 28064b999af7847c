// The size of one element, inline: strata::dtype_size's answer without a
// call (every call on the latency path asks it several times).
#pragma once

#include <array>
#include <cstddef>

#include "strata/types.hpp"

namespace strata::util {

// Indexed by DataType. At namespace scope, so that the table lives once in
// read-only data: a constexpr array local to the function was built on the
// stack at every call (ten stores, about 80 instructions per small
// all-reduce, which asks several times).
inline constexpr std::array<std::size_t, 10> kElementBytes = {4, 8, 2, 2, 1, 1, 4, 4, 8, 8};

// Precondition: `dtype` is a valid DataType (validated).
constexpr std::size_t element_bytes(DataType dtype) { return kElementBytes[static_cast<std::size_t>(dtype)]; }

}  // namespace strata::util
