// Topology discovery with the GPU probe, and strata::discover_topology, the
// public entry to it. It lives above the topology layer because it asks the
// GPU plugin which CUDA devices this process sees.
#include "exec/discover.hpp"
#include "gpu/plugin.hpp"
#include "topo/discover.hpp"

namespace strata {
namespace exec {

Discovered discover(MPI_Comm comm, const topo::NodeSplit& split) {
  Discovered found;
  found.topology = topo::discover(comm, split, gpu::probe_devices(), &found.gpu_rows);
  return found;
}

}  // namespace exec

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
  return exec::discover(comm, split).topology;
}

}  // namespace strata
