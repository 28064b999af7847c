// The public reduce_scatter and all_gather over any level (host or GPU, any
// algorithm): each level already has a reduce-scatter and an all-gather into
// owner slices (plan/level.hpp), and when the whole buffer holds one block
// per member those slices are the members' blocks. So a spec chooses among
// every registered algorithm for these collectives too, and an algorithm
// with a better way to do them writes it into its level.
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

// `job.count` is one block; `job.in` is this rank's block, `job.out` holds
// `size` blocks (job.in may be its block `rank`: in place). This rank's
// block is copied into place, then the level all-gathers job.out.
void all_gather_blocks(plan::Level& level, const plan::Job& job, int rank, int size);

}  // namespace strata::exec
