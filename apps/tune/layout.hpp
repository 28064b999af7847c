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
  // As the cost model sees it (model::shape_of): the nodes, the fewest
  // ranks on one, the ranks per core on the busiest machine, whether the
  // nodes share one machine.
  model::Shape shape;
  int max_ranks_per_node = 0;
  bool virtual_nodes = false;
  std::string ranks_per_node_text() const;  // "2", or "1..3"
};

Layout layout_of(const strata::Topology& topology);

}  // namespace tune
