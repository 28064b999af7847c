// The layout strata-tune runs on, as strata sees it (nodes from
// MPI_COMM_TYPE_SHARED or STRATA_RANKS_PER_NODE), in the terms the cost
// model and the spec file's comments use.
#pragma once

#include <string>

#include "strata/cost_model.hpp"
#include "strata/topology.hpp"

namespace tune {

namespace model = strata::model;  // the cost model (strata/cost_model.hpp)

struct Layout {
  int ranks = 0;
  int nodes = 0;
  int min_ranks_per_node = 0, max_ranks_per_node = 0;
  bool virtual_nodes = false;
  // Ranks per core on the busiest host (virtual nodes of one host count
  // together), at least 1.
  double oversubscription = 1;
  std::string ranks_per_node_text() const;  // "2", or "1..3"
  model::Shape shape() const { return {min_ranks_per_node, nodes, oversubscription}; }
};

Layout layout_of(const strata::Topology& topology);

}  // namespace tune
