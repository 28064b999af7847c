// The GPU algorithms' registry entries (lib/exec/algorithms.def), compiled
// in every build so that specs naming them parse everywhere; the GPU
// backend serves them (lib/gpu/backend.cpp).
#include "gpu/algorithm.hpp"

namespace strata::gpu {

// NCCL's own collectives over the ranks' devices.
extern const Algorithm nccl = {{.name = "nccl", .memory = Memory::cuda}};

// Slice owners reduce on their GPUs; bytes move over MPI through pinned
// host memory (works with ranks sharing a GPU). No broadcast of its own:
// the planner runs the host default (tree) through pinned copies.
extern const Algorithm psgpu = {{.name = "psgpu", .memory = Memory::cuda, .broadcast = false}};

}  // namespace strata::gpu
