// The parts of the GPU seam that need no CUDA: compiled in every build.

#include "gpu/backend.hpp"

namespace strata::gpu {

Backend::~Backend() = default;

plan::Level& Backend::level(const Algorithm& algorithm, plan::Group group) {
  for (Made& made : levels_)
    if (made.algorithm == &algorithm && made.group == group) return *made.level;
  std::unique_ptr<plan::Level> level = algorithm.make_level(*this, group);
  levels_.push_back({&algorithm, group, std::move(level)});
  return *levels_.back().level;
}

plan::Level& Backend::staged(const host::Algorithm& algorithm, plan::Group group) {
  for (Made& made : levels_)
    if (made.algorithm == &algorithm && made.group == group) return *made.level;
  std::unique_ptr<plan::Level> level = make_staged(algorithm, group);
  levels_.push_back({&algorithm, group, std::move(level)});
  return *levels_.back().level;
}

}  // namespace strata::gpu
