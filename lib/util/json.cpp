#include "util/json.hpp"

#include <fmt/format.h>

#include <iterator>

namespace strata::util {

void json_escape_into(std::string& out, std::string_view text) {
  for (const char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) fmt::format_to(std::back_inserter(out), "\\u{:04x}", unsigned(c));
        else out += c;
    }
  }
}

std::string json_string(std::string_view text) {
  std::string out = "\"";
  json_escape_into(out, text);
  return out + "\"";
}

}  // namespace strata::util
