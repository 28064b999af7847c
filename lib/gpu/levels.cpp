#include "gpu/levels.hpp"

#include "gpu/staged.hpp"

namespace strata::gpu {

template <typename Make>
plan::Level& Levels::made_once(const void* algorithm, plan::Group group, Make&& make) {
  for (Made& made : made_)
    if (made.algorithm == algorithm && made.group == group) return *made.level;
  made_.push_back({algorithm, group, make()});
  return *made_.back().level;
}

bool Levels::made(const void* algorithm, plan::Group group) const {
  for (const Made& made : made_)
    if (made.algorithm == algorithm && made.group == group) return true;
  return false;
}

plan::Level& Levels::level(const Algorithm& algorithm, plan::Group group) {
  return made_once(&algorithm, group, [&] { return algorithm.make_level(backend_, group); });
}

plan::Level& Levels::staged(const host::Algorithm& algorithm, plan::Group group) {
  return made_once(&algorithm, group, [&] { return make_staged_level(backend_, algorithm, group); });
}

}  // namespace strata::gpu
