// Writing JSON text by hand (the trace file, strata-topo's --json): the
// string escaping both need, in one place. Internal header.
#pragma once

#include <string>
#include <string_view>

namespace strata::util {

// Appends `text` to `out` escaped for the inside of a JSON string (quotes,
// backslashes, control characters), without the surrounding quotes.
void json_escape_into(std::string& out, std::string_view text);

// `text` as a JSON string, quotes included.
std::string json_string(std::string_view text);

}  // namespace strata::util
