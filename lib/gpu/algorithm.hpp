// A GPU algorithm: what the planner knows about it and how its executor is
// made. The registry (lib/exec/algorithms.def) lists it next to the host
// algorithms; the execute stage asks the GPU backend for the level this
// descriptor makes (Backend::level), so no code matches algorithm names.
// Host-only builds know the descriptors too (specs naming them parse
// everywhere); their factories throw Unavailable there, which never happens
// in practice because no backend exists without CUDA.
#pragma once

#include <memory>

#include "plan/algorithm.hpp"
#include "plan/level.hpp"

namespace strata::gpu {

class Backend;

// Makes the algorithm's executor over `group` of `backend` (collective over
// the group when it needs an NCCL communicator: every member makes it in
// the same call). The backend keeps it for later calls.
using MakeLevel = std::unique_ptr<plan::Level> (*)(Backend& backend, plan::Group group);

struct Algorithm {
  plan::Algorithm info;  // memory = cuda
  MakeLevel make_level = nullptr;
};

// The factories of the algorithms in lib/gpu/algorithms.cpp (defined by the
// CUDA backend, lib/gpu/levels.cpp; by the stub in host-only builds).
std::unique_ptr<plan::Level> make_nccl_level(Backend& backend, plan::Group group);
std::unique_ptr<plan::Level> make_psgpu_level(Backend& backend, plan::Group group);

}  // namespace strata::gpu
