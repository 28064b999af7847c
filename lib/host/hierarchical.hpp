// Hierarchical all-reduce "a/b": `a` inside each node, `b` across nodes.
//   1. reduce-scatter inside the node: local owner i (i < the smallest
//      node's rank count) ends with slice i of its node's sum. Algorithms
//      with shared memory do a real reduce-scatter; others all-reduce inside
//      the node and keep their slice.
//   2. each owner runs `b` over the cross-node communicator (one owner per
//      node, same local index) on its own slice: every local rank's link is
//      busy at once, and each element crosses the network once per step.
//   3. all-gather inside the node.
// Single-node jobs skip step 2; single-rank nodes skip steps 1 and 3.
#pragma once

#include "core/deadline.hpp"
#include "core/workspace.hpp"
#include "host/algorithm.hpp"
#include "host/shm_segment.hpp"
#include "topo/node_split.hpp"

namespace strata::host {

struct NodeContext {
  const topo::NodeSplit* split = nullptr;
  ShmSegment* segment = nullptr;  // over split->node; null unless `intra` uses shared memory
};

// `job.shards` is the cross-node algorithm's shard count. `info` names the
// call in timeout messages.
void hierarchical_all_reduce(const Job& job, const Algorithm& intra, const Algorithm& cross, const NodeContext& node,
                             const core::Deadline& deadline, CallInfo info, core::Workspace& workspace);

}  // namespace strata::host
