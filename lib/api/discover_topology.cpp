// strata::discover_topology: the public entry to topology discovery. It
// lives above the topology layer because it asks the GPU backend which CUDA
// devices this process sees.
#include "gpu/plugin.hpp"
#include "strata/topology.hpp"
#include "topo/discover.hpp"
#include "topo/node_split.hpp"

namespace strata {
namespace {

// Frees node_split's communicators on every exit path.
struct SplitGuard {
  topo::NodeSplit& split;
  ~SplitGuard() { topo::free_split(split); }
};

}  // namespace

Topology discover_topology(MPI_Comm comm) {
  topo::NodeSplit split = topo::split_nodes(comm);
  SplitGuard guard{split};
  return topo::discover(comm, split, gpu::probe_devices());
}

}  // namespace strata
