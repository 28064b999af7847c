#include "topo/node_split.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>

#include "util/abandoned.hpp"
#include "util/check.hpp"
#include "strata/errors.hpp"
#include "util/where.hpp"

namespace strata::topo {
namespace {

// STRATA_RANKS_PER_NODE as a positive integer, or 0 when unset.
int ranks_per_node_from_env() {
  const char* env = std::getenv("STRATA_RANKS_PER_NODE");
  if (!env || !*env) return 0;
  char* end = nullptr;
  const long value = std::strtol(env, &end, 10);
  if (*end != '\0' || value < 1 || value > 1 << 20)
    throw InvalidArgument(util::located(fmt::format("STRATA_RANKS_PER_NODE = '{}' must be a positive integer", env)));
  return static_cast<int>(value);
}

}  // namespace

std::vector<int> NodeSplit::ranks_on(int index) const {
  std::vector<int> ranks;
  for (int r = 0; r < static_cast<int>(node_of_rank.size()); ++r)
    if (node_of_rank[r] == index) ranks.push_back(r);
  return ranks;
}

NodeSplit split_nodes(MPI_Comm comm) {
  NodeSplit split;
  int rank = 0, size = 1;
  STRATA_CHECK_MPI(MPI_Comm_rank(comm, &rank));
  STRATA_CHECK_MPI(MPI_Comm_size(comm, &size));
  const int per_node = ranks_per_node_from_env();

  MPI_Comm shared = MPI_COMM_NULL;
  STRATA_CHECK_MPI(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &shared));
  // A node's identity: its lowest parent rank (the same on every member).
  int leader = rank;
  STRATA_CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, &leader, 1, MPI_INT, MPI_MIN, shared));
  if (per_node > 0) {
    // Every member of a virtual node must share the real node of its first rank.
    const int virtual_leader = rank / per_node * per_node;
    std::vector<int> leaders(size);
    STRATA_CHECK_MPI(MPI_Allgather(&leader, 1, MPI_INT, leaders.data(), 1, MPI_INT, comm));
    STRATA_CHECK_MPI(MPI_Comm_free(&shared));
    for (int r = virtual_leader; r < std::min(size, virtual_leader + per_node); ++r)
      if (leaders[r] != leaders[virtual_leader])
        throw InvalidArgument(util::located(fmt::format(
            "STRATA_RANKS_PER_NODE = {}: ranks {} and {} would share a virtual node but run on different hosts",
            per_node, virtual_leader, r)));
    leader = virtual_leader;
    STRATA_CHECK_MPI(MPI_Comm_split(comm, leader, rank, &split.node));
    split.virtual_nodes = true;
  } else {
    split.node = shared;
  }

  std::vector<int> leaders(size);
  STRATA_CHECK_MPI(MPI_Allgather(&leader, 1, MPI_INT, leaders.data(), 1, MPI_INT, comm));
  std::vector<int> distinct = leaders;
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  split.node_count = static_cast<int>(distinct.size());
  split.node_of_rank.resize(size);
  for (int r = 0; r < size; ++r)
    split.node_of_rank[r] =
        static_cast<int>(std::lower_bound(distinct.begin(), distinct.end(), leaders[r]) - distinct.begin());
  split.node_index = split.node_of_rank[rank];
  STRATA_CHECK_MPI(MPI_Comm_rank(split.node, &split.local_rank));
  STRATA_CHECK_MPI(MPI_Comm_size(split.node, &split.local_size));

  std::vector<int> counts(split.node_count, 0);
  for (int node : split.node_of_rank) ++counts[node];
  split.min_local_size = *std::min_element(counts.begin(), counts.end());
  // Local indices beyond the smallest node's size own no slice across nodes.
  const int color = split.local_rank < split.min_local_size ? split.local_rank : MPI_UNDEFINED;
  STRATA_CHECK_MPI(MPI_Comm_split(comm, color, split.node_index, &split.cross));
  if (split.node != MPI_COMM_NULL) STRATA_CHECK_MPI(MPI_Comm_set_errhandler(split.node, MPI_ERRORS_RETURN));
  if (split.cross != MPI_COMM_NULL) STRATA_CHECK_MPI(MPI_Comm_set_errhandler(split.cross, MPI_ERRORS_RETURN));
  return split;
}

void free_split(NodeSplit& split) {
  // Never throws (destructors call it): a failure to free leaves nothing
  // else to undo.
  int finalized = 0;
  if (MPI_Finalized(&finalized) != MPI_SUCCESS || finalized) return;
  util::free_comm(split.node);
  util::free_comm(split.cross);
}

}  // namespace strata::topo
