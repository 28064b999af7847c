// The GPU levels (plan::Level over an Engine): what a GPU algorithm of the
// registry, or a host algorithm run on CUDA tensors, does on one group of
// ranks. The GPU backend makes each once per (algorithm, group) and keeps
// it; the execute stage drives it flat or through the hierarchical driver.
#pragma once

#include <memory>

#include "host/algorithm.hpp"
#include "nccl/engine.hpp"
#include "plan/level.hpp"

namespace strata::nccl {

// NCCL over the group's NCCL communicator, created now (collective over
// the group) unless the group is one rank. Floating min/max move their
// bytes with NCCL and reduce with strata's kernels (plan/nan.hpp).
std::unique_ptr<plan::Level> make_nccl_level(Engine& engine, plan::Group group);

// psgpu over the group's MPI communicator (no NCCL): slice owners reduce on
// their GPUs, slices travel through pinned memory. job.shards >= 2 limits
// the flat all-reduce's owners to that many ranks. No broadcast (the
// planner never asks: the descriptor says so).
std::unique_ptr<plan::Level> make_psgpu_level(Engine& engine, plan::Group group);

// Host algorithm `algorithm` over the group's MPI communicator, on pinned
// copies of the CUDA data (staged()). As a node level it all-reduces the
// whole buffer and exchanges slices through pinned memory.
std::unique_ptr<plan::Level> make_staged_level(Engine& engine, const host::Algorithm& algorithm,
                                               plan::Group group);

}  // namespace strata::nccl
