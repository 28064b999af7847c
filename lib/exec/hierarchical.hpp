// Hierarchical collectives "a/b", the one driver for host and CUDA memory:
// `a` inside each node, `b` across nodes, each a plan::Level.
//
// all_reduce:
//   1. reduce-scatter inside the node: local owner i (i < the smallest
//      node's rank count) ends with slice i of its node's sum (levels with
//      shared memory or NCCL do a real reduce-scatter; others all-reduce
//      inside the node and keep their slice);
//   2. each owner runs `b` over the cross-node communicator (one owner per
//      node, same local index) on its own slice: every local rank's link is
//      busy at once, and each element crosses the network once per step;
//   3. all-gather inside the node.
// reduce: steps 1 and 2 with `b`'s reduce to the root's node, then step 3
// on the root's node only (the other nodes are done after step 2).
// broadcast: `a`'s broadcast inside the root's node, then each owner's
// slice by `b`'s broadcast from the root's node, then step 3 on every
// other node.
// Single-node jobs skip step 2. On a single-rank node all_reduce and
// reduce run `b` alone on the whole message, out of place. Uneven nodes:
// local ranks at or above the smallest node's size own nothing and only
// take part inside their node.
#pragma once

#include "plan/job.hpp"
#include "plan/level.hpp"
#include "topo/node_split.hpp"

namespace strata::exec {

// `intra` runs over split.node; `cross` over split.cross, null where this
// rank has no cross-node group (split.cross is MPI_COMM_NULL). `job.shards`
// is the cross level's shard count.
void hierarchical_all_reduce(const plan::Job& job, const topo::NodeSplit& split, plan::Level& intra,
                             plan::Level* cross);

// The same levels for a reduce to job.root (a rank of the parent
// communicator). `partial` (job.bytes(), strata's own memory) holds this
// rank's share of the reduction wherever it is not the root; the root's
// job.out receives the result.
void hierarchical_reduce(const plan::Job& job, const topo::NodeSplit& split, plan::Level& intra, plan::Level* cross,
                         void* partial);

// The same levels for a broadcast from job.root (a rank of the parent
// communicator) of job.out.
void hierarchical_broadcast(const plan::Job& job, const topo::NodeSplit& split, plan::Level& intra,
                            plan::Level* cross);

}  // namespace strata::exec
