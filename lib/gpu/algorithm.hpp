// A GPU algorithm: what the planner knows about it and how its level is
// made. Like a host algorithm it is one file, lib/gpu/<name>.cpp, defining
// `extern const gpu::Algorithm <name>` and its level (a plan::Level written
// against the device primitives, gpu/backend.hpp), plus one line in the
// registry (lib/exec/algorithms.def), which is why lib/meson.build compiles
// it into libstrata. It needs no CUDA: every build knows it, and specs
// naming it parse everywhere.
#pragma once

#include <memory>

#include "plan/algorithm.hpp"
#include "plan/level.hpp"

namespace strata::gpu {

class Backend;

// Makes the algorithm's level over `group` of `backend` (collective over
// the group when it needs an NCCL communicator: every member makes it in
// the same call). gpu::Levels keeps it for later calls.
using MakeLevel = std::unique_ptr<plan::Level> (*)(Backend& backend, plan::Group group);

struct Algorithm {
  plan::Algorithm info;  // memory = cuda
  MakeLevel make_level = nullptr;
};

// The MakeLevel of a level type constructed from (backend, group).
template <typename Level>
std::unique_ptr<plan::Level> make_level(Backend& backend, plan::Group group) {
  return std::make_unique<Level>(backend, group);
}

}  // namespace strata::gpu
