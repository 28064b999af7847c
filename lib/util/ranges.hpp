// Lists of ranks, cores or tensor indexes as short text: "0-3,6,8-9".
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace strata::util {

// Ascending values as comma-separated runs ("0-3,6,8-9"); "none" when empty.
std::string ranges(const std::vector<int>& values);
std::string ranges(const std::vector<std::size_t>& values);

}  // namespace strata::util
