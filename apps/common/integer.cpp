#include "integer.hpp"

#include <charconv>

namespace strata_apps {

std::optional<long long> parse_integer(std::string_view text, long long lo, long long hi) {
  long long value = 0;
  const char* end = text.data() + text.size();
  const auto [stop, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || stop != end || value < lo || value > hi) return std::nullopt;
  return value;
}

}  // namespace strata_apps
