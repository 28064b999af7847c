#include "plan/numerics.hpp"

#include "plan/nan.hpp"

namespace strata::plan {

std::optional<Reproducible> parse_reproducible(std::string_view text) {
  if (text == "off") return Reproducible::off;
  if (text == "order") return Reproducible::order;
  if (text == "exact") return Reproducible::exact;
  return std::nullopt;
}

std::string_view to_string(Reproducible mode) {
  switch (mode) {
    case Reproducible::off: return "off";
    case Reproducible::order: return "order";
    case Reproducible::exact: return "exact";
  }
  return "?";
}

namespace {
bool summing(ReduceOp op) { return op == ReduceOp::sum || op == ReduceOp::mean; }
bool sixteen_bit_float(DataType dtype) { return dtype == DataType::f16 || dtype == DataType::bf16; }
}  // namespace

bool Numerics::widens(DataType dtype, ReduceOp op) const {
  return summing(op) && sixteen_bit_float(dtype) && (accumulate_f32 || reproducible != Reproducible::off);
}

bool Numerics::exact_sum(DataType dtype, ReduceOp op) const {
  return reproducible == Reproducible::exact && summing(op) && floating(dtype);
}

}  // namespace strata::plan
