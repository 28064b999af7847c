// Settings that name one of a few words or "auto" (STRATA_SHM_PLACEMENT,
// STRATA_CMA_READS): read and checked the same way, with the same warning.
#pragma once

#include <initializer_list>
#include <string_view>

namespace strata::util {

// The index in `words` of environment variable `name`'s value; -1 when it is
// unset, empty or "auto". Any other value gives -1 too, after a WARN naming
// the variable, the words it takes, and that strata measures instead.
int env_word(const char* name, std::initializer_list<std::string_view> words);

}  // namespace strata::util
