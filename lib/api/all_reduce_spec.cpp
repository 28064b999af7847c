// strata::AllReduceSpec: the public face of plan/spec, validated against
// the registry (which the plan layer does not know).
#include "exec/registry.hpp"
#include "plan/spec.hpp"
#include "strata/spec.hpp"

namespace strata {

AllReduceSpec::AllReduceSpec(std::string_view text)
    : tuples_(plan::parse_spec(text, exec::catalogue()).entries) {}

AllReduceSpec::AllReduceSpec(std::initializer_list<SpecTuple> tuples)
    : AllReduceSpec(std::vector<SpecTuple>(tuples)) {}

AllReduceSpec::AllReduceSpec(std::vector<SpecTuple> tuples)
    : tuples_(plan::make_spec(std::move(tuples), exec::catalogue()).entries) {}

const SpecTuple* AllReduceSpec::select(std::size_t bytes) const {
  for (const SpecTuple& tuple : tuples_)
    if (tuple.limit < 0 || static_cast<unsigned long long>(tuple.limit) >= bytes) return &tuple;
  return tuples_.empty() ? nullptr : &tuples_.back();
}

std::string AllReduceSpec::to_string() const { return plan::Spec{tuples_}.to_string(); }

}  // namespace strata
