#include "byte_count.hpp"

#include <cctype>
#include <charconv>

namespace strata_apps {

std::optional<std::size_t> parse_byte_count(std::string_view text, std::string& why) {
  std::size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
  if (digits == 0) {
    why = "expected a byte count such as 8, 64k, 1M or 2G";
    return std::nullopt;
  }
  unsigned long long value = 0;
  if (std::from_chars(text.data(), text.data() + digits, value).ec != std::errc()) {
    why = "too large";
    return std::nullopt;
  }
  std::string suffix(text.substr(digits));
  for (char& c : suffix) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (suffix.size() == 3 && suffix.ends_with("ib")) suffix.resize(1);
  if (suffix.size() == 2 && suffix.ends_with('b')) suffix.resize(1);
  unsigned shift = 0;
  if (suffix.empty() || suffix == "b") shift = 0;
  else if (suffix == "k") shift = 10;
  else if (suffix == "m") shift = 20;
  else if (suffix == "g") shift = 30;
  else {
    why = "unknown suffix; use k, M or G (powers of 1024)";
    return std::nullopt;
  }
  if (value > (~0ull >> shift)) {
    why = "too large";
    return std::nullopt;
  }
  return static_cast<std::size_t>(value << shift);
}

}  // namespace strata_apps
