// The parts of the GPU seam that need no CUDA: compiled in every build.

#include "gpu/backend.hpp"

namespace strata::gpu {

Backend::~Backend() = default;

template <typename Make>
plan::Level& Backend::made_once(const void* algorithm, plan::Group group, Make&& make) {
  for (Made& made : levels_)
    if (made.algorithm == algorithm && made.group == group) return *made.level;
  levels_.push_back({algorithm, group, make()});
  return *levels_.back().level;
}

plan::Level& Backend::level(const Algorithm& algorithm, plan::Group group) {
  return made_once(&algorithm, group, [&] { return algorithm.make_level(*this, group); });
}

plan::Level& Backend::staged(const host::Algorithm& algorithm, plan::Group group) {
  return made_once(&algorithm, group, [&] { return make_staged(algorithm, group); });
}

}  // namespace strata::gpu
