// The GPU algorithms' registry entries (lib/exec/algorithms.def), compiled
// in every build so that specs naming them parse everywhere; their levels
// live in lib/nccl/levels.cpp.
#include "gpu/algorithm.hpp"

namespace strata::gpu {

// NCCL's own collectives over the ranks' devices (min/max of floating
// types through strata's kernels instead: NCCL's drop NaN, docs/GPU.md).
extern const Algorithm nccl = {
    {.name = "nccl", .memory = Memory::cuda, .nccl = true, .replica_ranks = true}, &make_nccl_level};

// Slice owners reduce on their GPUs; bytes move over MPI through pinned
// host memory (works with ranks sharing a GPU). No broadcast of its own:
// the planner runs the host default (tree) through pinned copies.
extern const Algorithm psgpu = {{.name = "psgpu", .memory = Memory::cuda, .broadcast = false}, &make_psgpu_level};

}  // namespace strata::gpu
