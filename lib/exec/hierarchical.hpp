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

#include "host/algorithm.hpp"
#include "host/shm_segment.hpp"
#include "plan/job.hpp"
#include "topo/node_split.hpp"
#include "util/arena.hpp"
#include "util/deadline.hpp"
#include "util/workspace.hpp"

namespace strata::exec {

// `job.shards` is the cross-node algorithm's shard count. `segment` is the
// node's shared-memory segment when the plan runs `intra` over it (else
// null). `info` names the call in timeout messages.
void hierarchical_all_reduce(const plan::Job& job, const host::Algorithm& intra, const host::Algorithm& cross,
                             const topo::NodeSplit& split, host::ShmSegment* segment, const util::Deadline& deadline,
                             const plan::CallInfo& info, util::Workspace& workspace, util::Arena* landing = nullptr);

}  // namespace strata::exec
