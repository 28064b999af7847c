#include "layout.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace tune {

std::string Layout::ranks_per_node_text() const {
  return min_ranks_per_node == max_ranks_per_node ? std::to_string(min_ranks_per_node)
                                                  : fmt::format("{}..{}", min_ranks_per_node, max_ranks_per_node);
}

Layout layout_of(const strata::Topology& topology) {
  Layout l;
  const model::Shape shape = model::shape_of(topology);
  l.ranks = static_cast<int>(topology.ranks.size());
  l.nodes = shape.nodes;
  l.virtual_nodes = topology.virtual_nodes;
  l.min_ranks_per_node = shape.ranks_per_node;
  l.oversubscription = shape.oversubscription;
  l.one_host = shape.one_host;
  for (const auto& node : topology.nodes)
    l.max_ranks_per_node = std::max(l.max_ranks_per_node, static_cast<int>(node.ranks.size()));
  return l;
}

}  // namespace tune
