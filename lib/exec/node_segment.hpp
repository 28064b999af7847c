// The shared-memory segment the host algorithms of one node run over.
// Internal header.
#pragma once

#include <memory>

#include "host/shm_segment.hpp"
#include "topo/node_split.hpp"

namespace strata::exec {

// A segment over `split.node`, its sets sized for the node's rank count;
// null on a node of one rank. Collective over split.node and unbounded in
// time: make it when the communicator is made, never inside a call with a
// deadline.
std::unique_ptr<host::ShmSegment> make_node_segment(const topo::NodeSplit& split);

}  // namespace strata::exec
