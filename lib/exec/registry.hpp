// The algorithm registry: every algorithm strata knows, each with what the
// planner needs (plan::Algorithm) and its backend's code. The list itself is
// lib/exec/algorithms.def; adding an algorithm is one file in its backend
// plus one line there.
#pragma once

#include <span>
#include <string_view>

#include "gpu/algorithm.hpp"
#include "host/algorithm.hpp"
#include "plan/algorithm.hpp"
#include "plan/choose.hpp"

namespace strata::exec {

struct Entry {
  const plan::Algorithm* info;
  const host::Algorithm* host = nullptr;  // set for host algorithms
  const gpu::Algorithm* gpu = nullptr;    // set for GPU algorithms

  constexpr Entry(const host::Algorithm& a) : info(&a.info), host(&a) {}  // NOLINT: one registry line each
  constexpr Entry(const gpu::Algorithm& a) : info(&a.info), gpu(&a) {}    // NOLINT
};

// The registry, in algorithms.def order.
std::span<const Entry> registry();

// The planner's view of it (plan::choose, spec validation).
plan::Catalogue catalogue();

// The entry of a catalogue algorithm (one of catalogue()'s pointers).
const Entry& entry_of(const plan::Algorithm& algorithm);

// Whether `choice` on CUDA memory has host stages: a level that is not a
// GPU algorithm over NCCL (psgpu's MPI through pinned memory, or a host
// algorithm through pinned copies), which the host runs between device
// copies. Judged from the plan, the same on every rank.
bool host_stages(const plan::Choice& choice);

}  // namespace strata::exec
