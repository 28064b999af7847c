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
  // Ranks per core on the busiest machine (virtual nodes, and hosts
  // emulated on one machine, count together), at least 1.
  double oversubscription = 1;
  bool one_host = false;  // several nodes, all on one machine (model::Shape::one_host)
  std::string ranks_per_node_text() const;  // "2", or "1..3"
  model::Shape shape() const { return {min_ranks_per_node, nodes, oversubscription, one_host}; }
};

Layout layout_of(const strata::Topology& topology);

}  // namespace tune
