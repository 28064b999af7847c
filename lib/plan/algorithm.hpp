// What the planner knows about an algorithm: its name and what it does, the
// memory it runs on, which collectives it serves, whether it wants the
// node's shared memory, and its cost-model formula. The code that runs it
// lives in a backend (lib/host, lib/gpu) and lib/exec/registry.cpp is the
// one list of algorithms; the plan stage gets that list as a Catalogue, so
// it can be tested with made-up algorithms.
#pragma once

#include <cstddef>

#include <span>
#include <string_view>

#include "model/formula.hpp"
#include "strata/types.hpp"

namespace strata::plan {

struct Algorithm {
  std::string_view name;
  std::string_view description;  // one line: what it does (registered_algorithms)
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
  // Its flat host all-reduce, reduce and broadcast are MPI's own: where
  // the call check is an MPI all-reduce (several nodes), a call small
  // enough travels inside the check's record (exec/check_record.hpp), the
  // check's MPI all-reduce with the data beside its words, instead of a
  // second MPI collective after it.
  bool carried_by_check = false;
  // Its all-reduce in the cost model (model/formula.hpp; none: the model
  // makes no prediction for it).
  model::Formula model{};
};

// The most bytes a call check over MPI carries (Algorithm::carried_by_check).
// Every such check moves this much beside the digest, so it stays small: a
// larger record made every check dearer than the round it saves.
constexpr std::size_t kCheckCarriesBytes = 256;

using Catalogue = std::span<const Algorithm* const>;

// The algorithm called `name` in `catalogue`, or nullptr.
const Algorithm* find(Catalogue catalogue, std::string_view name);

}  // namespace strata::plan
