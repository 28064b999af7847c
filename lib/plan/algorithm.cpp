#include "plan/algorithm.hpp"

namespace strata::plan {

const Algorithm* find(Catalogue catalogue, std::string_view name) {
  for (const Algorithm* algorithm : catalogue)
    if (algorithm->name == name) return algorithm;
  return nullptr;
}

}  // namespace strata::plan
