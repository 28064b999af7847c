// discover_topology over a node split the caller already has (the
// Communicator keeps one), so the nodes are not split a second time.
// Internal.
#pragma once

#include <mpi.h>

#include "strata/topology.hpp"
#include "topo/node_split.hpp"

namespace strata::topo {

// Collective over `comm`; `split` must be split_nodes(comm)'s result (or the
// same grouping). Otherwise as strata::discover_topology.
Topology discover(MPI_Comm comm, const NodeSplit& split);

}  // namespace strata::topo
