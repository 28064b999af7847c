#include "util/ranges.hpp"

#include <fmt/format.h>

namespace strata::util {
namespace {

template <typename T>
std::string runs(const std::vector<T>& values) {
  if (values.empty()) return "none";
  std::string text;
  for (std::size_t i = 0; i < values.size();) {
    std::size_t j = i;
    while (j + 1 < values.size() && values[j + 1] == values[j] + 1) ++j;
    if (!text.empty()) text += ',';
    text += j == i ? fmt::format("{}", values[i]) : fmt::format("{}-{}", values[i], values[j]);
    i = j + 1;
  }
  return text;
}

}  // namespace

std::string ranges(const std::vector<int>& values) { return runs(values); }
std::string ranges(const std::vector<std::size_t>& values) { return runs(values); }

}  // namespace strata::util
