// The public reduce_scatter over any level (host or GPU, any algorithm):
// each level already has a reduce-scatter into owner slices
// (plan/level.hpp), and when the whole buffer holds one block per member
// those slices are the members' blocks. So a spec chooses among every
// registered algorithm for it too. (The public all_gather is the level's
// own all_gather_blocks, built on its all-gather the same way.)
#pragma once

#include "plan/job.hpp"
#include "plan/level.hpp"

namespace strata::exec {

// `job.count` is one block; `job.in` holds `size` blocks, `job.out` one.
// The level reduce-scatters the whole input into `whole` (strata's scratch
// of `size` blocks, in the level's memory), then this rank's block is
// copied to job.out. The caller's input is never written (job.out may lie
// inside it, at block `rank`: in place).
void reduce_scatter_blocks(plan::Level& level, const plan::Job& job, int rank, int size, void* whole);

}  // namespace strata::exec
