// NodeSplit: how a communicator's ranks group into nodes, and the two
// communicators hierarchical algorithms run over: `node` (the ranks of my
// node) and `cross` (one rank per node: those with my local index).
//
// Nodes come from MPI_COMM_TYPE_SHARED. STRATA_RANKS_PER_NODE=k replaces
// them with virtual nodes of k consecutive ranks (the last may be smaller),
// so hierarchical code runs on one machine; a virtual node must lie inside
// one real node (it shares memory), otherwise InvalidArgument.
#pragma once

#include <mpi.h>

#include <string>
#include <vector>

namespace strata::topo {

struct NodeSplit {
  MPI_Comm node = MPI_COMM_NULL;   // my node's ranks, ordered by rank in the parent
  MPI_Comm cross = MPI_COMM_NULL;  // local index < min_local_size: one rank per node, by node index; else NULL
  int node_index = 0;              // nodes are numbered by their lowest parent rank
  int node_count = 1;
  int local_rank = 0;
  int local_size = 1;
  int min_local_size = 1;          // fewest ranks on any node
  std::vector<int> node_of_rank;   // parent rank -> node index
  bool virtual_nodes = false;      // from STRATA_RANKS_PER_NODE

  // Parent ranks on node `index`, ascending.
  std::vector<int> ranks_on(int index) const;
};

// Collective over `comm`. The returned communicators belong to the caller
// (free_split). Throws InvalidArgument for a bad STRATA_RANKS_PER_NODE,
// BackendError if MPI fails.
NodeSplit split_nodes(MPI_Comm comm);

// Frees the communicators (local operation in practice; never throws).
void free_split(NodeSplit& split);

}  // namespace strata::topo
