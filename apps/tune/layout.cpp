#include "layout.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace tune {

std::string Layout::ranks_per_node_text() const {
  return min_ranks_per_node == max_ranks_per_node ? std::to_string(min_ranks_per_node)
                                                  : fmt::format("{}..{}", min_ranks_per_node, max_ranks_per_node);
}

Layout layout_of(const strata::Topology& topology) {
  Layout l;
  l.ranks = static_cast<int>(topology.ranks.size());
  l.nodes = static_cast<int>(topology.nodes.size());
  l.virtual_nodes = topology.virtual_nodes;
  l.min_ranks_per_node = l.ranks;
  std::map<std::string, std::pair<int, int>> hosts;  // hostname -> (ranks, cores)
  for (const auto& node : topology.nodes) {
    const int n = static_cast<int>(node.ranks.size());
    l.min_ranks_per_node = std::min(l.min_ranks_per_node, n);
    l.max_ranks_per_node = std::max(l.max_ranks_per_node, n);
    auto& host = hosts[node.hostname];
    host.first += n;
    host.second = node.cores;  // virtual nodes of one host report the same hardware
  }
  for (const auto& [name, host] : hosts)
    if (host.second > 0) l.oversubscription = std::max(l.oversubscription, double(host.first) / host.second);
  return l;
}

}  // namespace tune
