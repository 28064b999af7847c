#include "exec/plan_cache.hpp"

#include <utility>

#include "exec/registry.hpp"

namespace strata::exec {

PlanCache::PlanCache(plan::Spec spec, plan::Layout layout)
    : spec_(std::move(spec)), spec_hash_(plan::spec_hash(spec_)), layout_(layout) {}

std::uint64_t PlanCache::spec_hash(const plan::Spec* spec) const { return spec ? plan::spec_hash(*spec) : spec_hash_; }

plan::Choice PlanCache::choose(Collective collective, std::size_t bytes, Memory memory, Implementation implementation,
                               const plan::Spec* spec) const {
  return plan::choose(catalogue(), spec ? *spec : spec_, collective, bytes, implementation, memory, layout_);
}

const plan::Choice& PlanCache::cached(Collective collective, std::size_t bytes, Memory memory,
                                      Implementation implementation, const plan::Spec* spec) {
  const plan::Spec* effective = spec ? spec : &spec_;
  LastChoice& last = last_;
  if (!last.choice.algorithm || last.spec != effective || last.collective != collective || last.bytes != bytes ||
      last.memory != memory || last.implementation != implementation) {
    last = {effective, collective, bytes, memory, implementation,
            choose(collective, bytes, memory, implementation, effective), {}};
    last.described = last.choice.describe();
  }
  return last.choice;
}

}  // namespace strata::exec
