#include "exec/plan_cache.hpp"

#include <utility>

#include "exec/registry.hpp"
#include "plan/fingerprint.hpp"

namespace strata::exec {

PlanCache::PlanCache(plan::Spec spec, plan::Layout layout)
    : spec_(std::move(spec)), spec_hash_(plan::spec_hash(spec_)), layout_(layout) {}

std::uint64_t PlanCache::spec_hash(const plan::Spec* spec) const { return spec ? plan::spec_hash(*spec) : spec_hash_; }

plan::Choice PlanCache::choose(Collective collective, std::size_t bytes, Memory memory, Implementation implementation,
                               const plan::Spec* spec, plan::Reduction reduction) const {
  if (plan::takes_canonical(layout_, collective, reduction)) return plan::canonical_choice(catalogue());
  return plan::choose(catalogue(), spec ? *spec : spec_, collective, bytes, implementation, memory, layout_);
}

const plan::Choice& PlanCache::cached(Collective collective, std::size_t bytes, Memory memory,
                                      Implementation implementation, const plan::Spec* spec, plan::Reduction reduction) {
  const plan::Spec* effective = spec ? spec : &spec_;
  // A caller's spec (a facade's) is known by its content, not its address:
  // a facade made where a destroyed one lay has another spec at the same
  // address, and ranks must never run a stale plan.
  const std::uint64_t hash = effective == &spec_ ? spec_hash_ : plan::spec_hash(*effective);
  LastChoice& last = last_;
  const bool canonical = plan::takes_canonical(layout_, collective, reduction);
  if (last.canonical != canonical || !last.choice.algorithm || last.spec != effective || last.spec_hash != hash || last.collective != collective ||
      last.bytes != bytes || last.memory != memory || last.implementation != implementation) {
    last = {effective, hash, collective, bytes, memory, implementation, canonical,
            choose(collective, bytes, memory, implementation, effective, reduction), {}};
    last.described = last.choice.describe();
  }
  return last.choice;
}

}  // namespace strata::exec
