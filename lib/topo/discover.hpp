// discover_topology over a node split the caller already has (the
// Communicator keeps one), so the nodes are not split a second time.
// Internal.
#pragma once

#include <mpi.h>

#include <string>
#include <vector>

#include "strata/topology.hpp"
#include "topo/node_split.hpp"

namespace strata::topo {

// Collective over `comm`; `split` must be split_nodes(comm)'s result (or the
// same grouping). `cuda_bus_ids`: the PCI bus ids of the CUDA devices this
// process sees, by CUDA index (the GPU backend's visible_devices(); empty
// without one), for the GPU assignment. Otherwise as
// strata::discover_topology.
Topology discover(MPI_Comm comm, const NodeSplit& split, std::vector<std::string> cuda_bus_ids);

}  // namespace strata::topo
