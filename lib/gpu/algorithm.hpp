// A GPU algorithm: what the planner knows about it. The GPU backend
// (lib/gpu/backend.hpp) runs it for CUDA tensors; host builds know the
// names too, so specs naming them are valid everywhere.
#pragma once

#include "plan/algorithm.hpp"

namespace strata::gpu {

struct Algorithm {
  plan::Algorithm info;  // memory = cuda
};

}  // namespace strata::gpu
