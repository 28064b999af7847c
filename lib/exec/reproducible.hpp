// The reproducible modes' host execution (docs/REPRODUCIBILITY.md). What
// `order` needs is a plan, not a transform: plan::canonical_choice folds
// every element over the ranks in rank order, and the executor asks for it
// (PlanCache, plan::takes_canonical). Here are the two transforms a call
// may run through around its plan, on host memory:
//   widened     f16 and bf16 sums accumulate in f32: the contributions are
//               widened into scratch, reduced (and a mean divided) in f32,
//               and rounded once into the caller's output;
//   exact sum   floating sums in mode `exact`: every rank measures its
//               contributions' scales, one all-reduce (max) agrees them,
//               the contributions go to fixed point (exec/fixed_point.hpp),
//               the plan sums the integers (exact in any order and shape),
//               and the sum is turned back, rounded once.
// Internal header.
#pragma once

#include <cstddef>

#include "exec/execute.hpp"
#include "plan/choose.hpp"
#include "plan/job.hpp"

namespace strata::exec {

// Elements of a reducing call's input over `size` ranks: reduce_scatter's
// holds every rank's block.
std::size_t input_count(Collective collective, const plan::Job& job, int size);

// Both take run_host's arguments (job.op may be mean) and do its whole
// work, finish included. `check` rides with the first collective they run.
// run_exact throws Unavailable on every rank for more contributors than
// fixed_point::kMaxContributors.
void run_widened(Collective collective, const plan::Choice& choice, const plan::Job& job, std::size_t contributors,
                 const HostContext& context, const util::Deadline& deadline, const plan::CallInfo& info,
                 const plan::Fingerprint* check);
void run_exact(Collective collective, const plan::Choice& choice, const plan::Job& job, std::size_t contributors,
               const HostContext& context, const util::Deadline& deadline, const plan::CallInfo& info,
               const plan::Fingerprint* check);

}  // namespace strata::exec
