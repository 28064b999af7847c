// Topology discovery with the GPU's part: the nodes' hardware and every
// rank's binding (topo/discover.hpp) and, through the GPU plugin, the CUDA
// devices each rank sees (every rank's row of the GPU control plane).
// Internal header.
#pragma once

#include <mpi.h>

#include <vector>

#include "strata/topology.hpp"
#include "topo/gpu_plane.hpp"
#include "topo/node_split.hpp"

namespace strata::exec {

struct Discovered {
  Topology topology;                   // identical on every rank
  std::vector<topo::GpuRow> gpu_rows;  // one per rank of `comm`
};

// Collective over `comm`, whose nodes `split` describes.
Discovered discover(MPI_Comm comm, const topo::NodeSplit& split);

}  // namespace strata::exec
