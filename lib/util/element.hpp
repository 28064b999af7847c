// The size of one element, inline: strata::dtype_size's answer without a
// call (every call on the latency path asks it several times).
#pragma once

#include <array>
#include <cstddef>

#include "strata/types.hpp"

namespace strata::util {

// Precondition: `dtype` is a valid DataType (validated).
constexpr std::size_t element_bytes(DataType dtype) {
  constexpr std::array<std::size_t, 10> kSizes = {4, 8, 2, 2, 1, 1, 4, 4, 8, 8};
  return kSizes[static_cast<std::size_t>(dtype)];
}

}  // namespace strata::util
