// The host algorithm registry: adding an algorithm is one file plus one line
// in each list below.
#include <algorithm>
#include <array>

#include "host/algorithm.hpp"

namespace strata::host {

extern const Algorithm xring_algorithm;
extern const Algorithm rechd_algorithm;
extern const Algorithm pscpu_algorithm;
extern const Algorithm tree_algorithm;
extern const Algorithm mpi_algorithm;

namespace {
const std::array kRegistry = {
    &xring_algorithm,
    &rechd_algorithm,
    &pscpu_algorithm,
    &tree_algorithm,
    &mpi_algorithm,
};
}  // namespace

std::span<const Algorithm* const> algorithms() { return kRegistry; }

const Algorithm* find_algorithm(std::string_view name) {
  auto it = std::find_if(kRegistry.begin(), kRegistry.end(), [&](const Algorithm* a) { return a->name == name; });
  return it == kRegistry.end() ? nullptr : *it;
}

}  // namespace strata::host
