#include "layout.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace tune {

std::string Layout::ranks_per_node_text() const {
  const int fewest = shape.ranks_per_node;
  return fewest == max_ranks_per_node ? std::to_string(fewest) : fmt::format("{}..{}", fewest, max_ranks_per_node);
}

Layout layout_of(const strata::Topology& topology) {
  Layout l;
  l.ranks = static_cast<int>(topology.ranks.size());
  l.shape = model::shape_of(topology);
  l.virtual_nodes = topology.virtual_nodes;
  for (const auto& node : topology.nodes)
    l.max_ranks_per_node = std::max(l.max_ranks_per_node, static_cast<int>(node.ranks.size()));
  return l;
}

}  // namespace tune
