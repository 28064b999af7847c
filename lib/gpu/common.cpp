// The parts of the GPU seam that need no CUDA: compiled in every build.
#include <fmt/format.h>

#include "gpu/backend.hpp"
#include "strata/errors.hpp"

namespace strata::gpu {

Backend::~Backend() = default;

bool serves_natively(std::string_view algorithm) {
  const auto slash = algorithm.find('/');
  const std::string_view intra = algorithm.substr(0, slash);
  if (intra != "nccl" && intra != "psgpu") return false;
  if (slash == std::string_view::npos) return true;
  // The planner only keeps cross levels it knows: nccl or a host algorithm
  // run through pinned copies; psgpu has no cross-node form.
  return algorithm.substr(slash + 1) != "psgpu";
}

}  // namespace strata::gpu
