// The plans of one communicator: its all_reduce_spec, the layout its plans
// are made for (nodes, ranks per node, what the GPU control plane allows),
// and the choice for the last shape asked for. Training loops repeat one
// shape: a spec walk and name lookups are worth skipping. No communication.
// Internal header.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "plan/choose.hpp"
#include "plan/spec.hpp"
#include "strata/types.hpp"

namespace strata::exec {

class PlanCache {
 public:
  PlanCache() = default;
  // `spec`: the communicator's (resolved against exec::catalogue());
  // `layout`: what plans are made for.
  PlanCache(plan::Spec spec, plan::Layout layout);

  const plan::Spec& spec() const { return spec_; }
  const plan::Layout& layout() const { return layout_; }
  // plan::spec_hash of `spec`, or of the communicator's spec when null.
  std::uint64_t spec_hash(const plan::Spec* spec = nullptr) const;

  // The plan for one call of `bytes` bytes under `spec` (null: the
  // communicator's), reducing as `reduction` says: plan::canonical_choice where the
  // layout's reproducible mode asks for it (plan::takes_canonical), else
  // plan::choose. Throws InvalidArgument where the spec names nothing that
  // can run it.
  plan::Choice choose(Collective collective, std::size_t bytes, Memory memory, Implementation implementation,
                      const plan::Spec* spec = nullptr, plan::Reduction reduction = {}) const;

  // choose(), reusing the last answer when the shape repeats. The reference
  // (and described()) stays valid until the next cached() call.
  const plan::Choice& cached(Collective collective, std::size_t bytes, Memory memory, Implementation implementation,
                             const plan::Spec* spec = nullptr, plan::Reduction reduction = {});
  // The last cached() choice's describe(), kept for messages and traces.
  const std::string& described() const { return last_.described; }

 private:
  plan::Spec spec_;
  std::uint64_t spec_hash_ = 0;
  plan::Layout layout_;

  struct LastChoice {
    const plan::Spec* spec = nullptr;
    std::uint64_t spec_hash = 0;
    Collective collective = Collective::all_reduce;
    std::size_t bytes = 0;
    Memory memory = Memory::host;
    Implementation implementation = Implementation::automatic;
    bool canonical = false;
    plan::Choice choice;
    std::string described;
  } last_;
};

}  // namespace strata::exec
