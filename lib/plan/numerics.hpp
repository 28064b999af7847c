// How a communicator's reductions round: Config::reproducible (the
// `order` and `exact` modes) and Config::accumulate_f32 (16-bit sums
// accumulated in f32). Agreed by every rank when the communicator is made;
// the plan (plan::choose) and the execute stage (exec/reproducible.hpp)
// follow it. docs/REPRODUCIBILITY.md.
#pragma once

#include <optional>
#include <string_view>

#include "strata/types.hpp"

namespace strata::plan {

enum class Reproducible {
  off,    // bits may change with the algorithm, the layout and the rank count
  order,  // per rank count, the same bits whatever the algorithm, spec, layout, size or form
  exact,  // the same bits for any assignment of the contributions to ranks, and with added zero ranks
};

// "off", "order", "exact"; nullopt for anything else.
std::optional<Reproducible> parse_reproducible(std::string_view text);
std::string_view to_string(Reproducible mode);

struct Numerics {
  Reproducible reproducible = Reproducible::off;
  // f16 and bf16 sums (and means) accumulate in f32 and round once at the
  // end; always so in the reproducible modes.
  bool accumulate_f32 = false;

  // Whether a sum or mean of `dtype` runs widened to f32 (a 16-bit float
  // type, and f32 accumulation asked for or a reproducible mode).
  bool widens(DataType dtype, ReduceOp op) const;
  // Whether a call runs through exact fixed-point accumulation: exact mode,
  // a floating dtype, sum or mean.
  bool exact_sum(DataType dtype, ReduceOp op) const;
};

}  // namespace strata::plan
