// Algorithm selection: from a spec, a collective, a message size and the
// caller's Implementation to the host algorithm (and shard count) that runs.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "host/algorithm.hpp"
#include "plan/spec.hpp"
#include "strata/types.hpp"

namespace strata::plan {

using strata::Collective;  // all_reduce, reduce, broadcast (public, types.hpp)

struct Choice {
  const host::Algorithm* algorithm = nullptr;  // flat, or the intra-node level of "a/b"
  int shards = 1;                              // flat: the algorithm's; "a/b": the cross-node level's
  const host::Algorithm* cross = nullptr;      // the cross-node level of "a/b", else null
  std::string describe() const;                // "xring#2", "pscpu/xring#2"
};

// Whether `name` is an algorithm strata knows (host or GPU), one level of a
// hierarchical name. Used to validate specs.
bool is_known_algorithm(std::string_view name);

// The table "auto" stands for on host memory, for a job on `node_count`
// nodes: shared-memory pscpu on one node, hierarchical plans across nodes
// (see docs/ALGORITHMS.md for the measurements behind them).
const Spec& default_host_spec(int node_count = 1);

// The spec a communicator uses: `configured` if non-empty, else
// $STRATA_SPEC, else the spec in the file named by $STRATA_SPEC_FILE, else
// "auto". Throws InvalidArgument for an invalid spec or unreadable file.
Spec resolve_spec(std::string_view configured);

// The effective size -> algorithm map, one line, for STRATA_DEBUG=INFO:
// "auto = [0 .. 4096 B: tree] [4097 .. 262144 B: rechd] [262145 B and up: xring]".
std::string describe_map(const Spec& spec, int node_count = 1);

// Pick the algorithm for one call. A hierarchical name "a/b" yields both
// levels for all-reduce (the executor runs it flat as `a` on a single node);
// reduce and broadcast run `a` flat. An algorithm that cannot serve the call
// (a GPU algorithm on host memory, a reduce or broadcast it does not
// implement) falls back to the default table's choice; a GPU cross-node
// level on host memory leaves `a` flat.
// Throws InvalidArgument for implementation = nccl on host memory.
// `node_count` picks the table "auto" stands for.
Choice choose(const Spec& spec, Collective collective, std::size_t bytes, Implementation implementation,
              int node_count = 1);

}  // namespace strata::plan
