// strata::Topology: which ranks share a node, what hardware each node has
// (packages, NUMA domains, cores, NVIDIA GPUs) and which cores each rank is
// bound to. A plain value: every rank of the communicator holds all of it.
#pragma once

#include <mpi.h>

#include <string>
#include <vector>

namespace strata {

// One NVIDIA GPU (PCI vendor 0x10de, display or 3D controller class).
struct GpuInfo {
  // "dddd:bb:dd.f", lower-case hex as in sysfs and lspci. CUDA's
  // cudaDeviceGetPCIBusId spells the same id in upper case: compare
  // case-insensitively.
  std::string pci_bus_id;
  int numa = -1;  // logical index of the NUMA domain it is attached to; -1 = unknown
};

// One node: real (MPI_COMM_TYPE_SHARED) or virtual (STRATA_RANKS_PER_NODE).
// The hardware counts describe the host the node runs on, as the node's
// lowest rank sees it (the cores and NUMA domains this job may use), so
// virtual nodes on one host report the same hardware.
struct NodeInfo {
  std::string hostname;
  std::vector<int> ranks;  // communicator ranks on this node, ascending; ranks[i] has local rank i
  int packages = 0;
  int numa_domains = 0;
  int cores = 0;
  std::vector<GpuInfo> gpus;  // in PCI order
  // The boot id of its kernel ("" when unknown): virtual nodes, and hosts
  // emulated in network namespaces of one machine, share it and its cores.
  std::string machine;
};

// The CUDA device a rank drives for CUDA tensors, chosen at construction
// (lib/topo/gpu_map.hpp): STRATA_GPU_MAP if set, else every local rank a
// device of its own while the node has enough, one on the rank's own NUMA
// domains first (hwloc, matched to CUDA devices by PCI bus id). Ranks of a
// node share a device only when it has more local ranks than devices (or
// STRATA_GPU_MAP or CUDA_VISIBLE_DEVICES says so); `how` then says so.
struct GpuAssignment {
  int cuda_device = -1;    // CUDA index in that rank's process (after CUDA_VISIBLE_DEVICES); -1 = none
  std::string pci_bus_id;  // lower case; "" when unknown
  // How it was chosen ("STRATA_GPU_MAP", "nearest: NUMA 0", "elsewhere:
  // NUMA 1 (...)", "round robin: no GPU on the rank's NUMA domains"), with
  // "; shares it with local rank L: why" when another local rank drives it
  // too; or why there is none (no CUDA device visible, a bad STRATA_GPU_MAP).
  std::string how;
};

// One rank of the communicator.
struct RankInfo {
  int rank = 0;
  int node = 0;        // index into Topology::nodes
  int local_rank = 0;  // position in its node's `ranks`
  std::string hostname;
  // Logical indexes (hwloc's, 0-based within the node) of the cores the
  // process is bound to, ascending; all of the node's cores when unbound.
  std::vector<int> bound_cores;
  std::vector<int> numa;  // logical indexes of the NUMA domains those cores sit in, ascending
  GpuAssignment gpu;      // the device its CUDA tensors default to
};

struct Topology {
  std::vector<NodeInfo> nodes;  // numbered by their lowest rank
  std::vector<RankInfo> ranks;  // indexed by rank
  bool virtual_nodes = false;   // nodes come from STRATA_RANKS_PER_NODE
};

// Collective over `comm`: every rank must call it, and every rank returns the
// whole Topology. Nodes come from MPI_COMM_TYPE_SHARED, or virtual nodes of
// STRATA_RANKS_PER_NODE consecutive ranks; each node's lowest rank reads the
// hardware with hwloc once, every rank reports its own binding. When ranks
// that share a node are unbound or bound across NUMA domains, logs one
// warning with the launcher flags that fix it (STRATA_DEBUG=WARN and up):
// once per job, from MPI_COMM_WORLD rank 0's process.
// Throws InvalidArgument for a bad STRATA_RANKS_PER_NODE, BackendError if MPI
// fails, Unavailable if hwloc cannot read the node.
Topology discover_topology(MPI_Comm comm);

// A human-readable, multi-line description: one block per node with its
// hardware, GPUs and each rank's bound cores and NUMA domains.
std::string to_text(const Topology& topology);

// The same as one JSON object: {"virtual_nodes", "nodes": [...], "ranks":
// [...]}, field names as in the structs above (docs/TOPOLOGY.md).
std::string to_json(const Topology& topology);

}  // namespace strata
