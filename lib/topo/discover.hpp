// discover_topology over a node split the caller already has (the
// Communicator keeps one), so the nodes are not split a second time.
// Internal.
#pragma once

#include <mpi.h>

#include <string>
#include <vector>

#include "strata/topology.hpp"
#include "topo/gpu_plane.hpp"
#include "topo/node_split.hpp"

namespace strata::topo {

// What this process sees of CUDA (the GPU backend's probe_devices()).
struct CudaProbe {
  std::vector<std::string> bus_ids;  // PCI bus id of each CUDA device, by CUDA index; empty without one
  std::vector<int> modes;            // compute mode of each (kCompute* in topo/gpu_plane.hpp), -1 unknown
  std::string problem;               // why CUDA cannot be used in this process; "" when it can
};

// Collective over `comm`; `split` must be split_nodes(comm)'s result (or the
// same grouping). `cuda` feeds the GPU assignment (and the rows). When
// `gpu_rows` is given, it receives the GPU control plane's table, one row
// per rank, identical on every rank. Otherwise as strata::discover_topology.
Topology discover(MPI_Comm comm, const NodeSplit& split, const CudaProbe& cuda,
                  std::vector<GpuRow>* gpu_rows = nullptr);

}  // namespace strata::topo
