// The sweep's table on stdout (and --csv): every plan at every size with its
// iterations and median time, and with --model the model's prediction and
// its error, then per plan the largest error from 64 KiB up (the model's
// target, docs/SCALING.md).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "strata/cost_model.hpp"
#include "sweep.hpp"

namespace tune {

namespace model = strata::model;  // the cost model (strata/cost_model.hpp)

// `machine`: the model to compare with (none: no prediction columns).
std::string sweep_table(const SweepResult& result, const std::vector<std::string>& plans,
                        const std::optional<model::Machine>& machine, const model::Shape& shape, int ranks);
std::string sweep_csv(const SweepResult& result, const std::vector<std::string>& plans,
                      const std::optional<model::Machine>& machine, const model::Shape& shape);

}  // namespace tune
