// The parts of the GPU seam that need no CUDA: compiled in every build.
#include <fmt/format.h>

#include "gpu/backend.hpp"
#include "host/algorithm.hpp"
#include "strata/errors.hpp"

namespace strata::gpu {

Backend::~Backend() = default;

bool serves_natively(std::string_view algorithm) {
  const auto slash = algorithm.find('/');
  const std::string_view intra = algorithm.substr(0, slash);
  if (intra != "nccl" && intra != "psgpu") return false;
  if (slash == std::string_view::npos) return true;
  const std::string_view cross = algorithm.substr(slash + 1);
  return cross == "nccl" || host::find_algorithm(cross) != nullptr;
}

}  // namespace strata::gpu
