// What the planner knows about an algorithm: its name, the memory it runs
// on, which collectives it serves and whether it wants the node's shared
// memory. The code that runs it lives in a backend (lib/host, lib/gpu) and
// lib/exec/registry.cpp is the one list of algorithms; the plan stage gets
// that list as a Catalogue, so it can be tested with made-up algorithms.
#pragma once

#include <span>
#include <string_view>

#include "strata/types.hpp"

namespace strata::plan {

struct Algorithm {
  std::string_view name;
  Memory memory = Memory::host;  // cuda: CUDA tensors only (host tensors fall back to the default)
  bool reduce = true;            // serves reduce; else the default table's choice runs
  bool broadcast = true;         // serves broadcast; likewise
  // Inside one node it runs over the node's shared-memory segment (flat on a
  // one-node job, and as the intra-node level of "a/b").
  bool shared_memory = false;
  // Its shard count (`#M`) changes how it runs (xring: M rings; rechd: M
  // slices; pscpu: M owners; psgpu: M owners); false: `#M` is accepted and
  // ignored. strata-tune measures `#M` candidates only where it is true.
  bool shards = false;
  // It runs over NCCL communicators: a plan may use it over a group of ranks
  // only where the GPU control plane lets NCCL run there (plan::Layout).
  bool nccl = false;
  // Its flat all-reduce can give every replica of a CUDA batch (several
  // GPUs per rank) an NCCL rank of its own instead of combining them on the
  // rank's device first (plan::replica_path).
  bool replica_ranks = false;
};

using Catalogue = std::span<const Algorithm* const>;

// The algorithm called `name` in `catalogue`, or nullptr.
const Algorithm* find(Catalogue catalogue, std::string_view name);

}  // namespace strata::plan
