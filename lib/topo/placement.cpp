#include "topo/placement.hpp"

#include <set>

namespace strata::topo {

bool cores_shared(const Topology& topology, int rank) {
  const std::string& host = topology.ranks.at(static_cast<std::size_t>(rank)).hostname;
  std::set<int> cores;
  std::size_t ranks = 0;
  for (const RankInfo& r : topology.ranks) {
    if (r.hostname != host) continue;
    ++ranks;
    cores.insert(r.bound_cores.begin(), r.bound_cores.end());
  }
  // A rank whose binding is unknown (no cores listed) counts as sharing.
  return cores.empty() || ranks > cores.size();
}

}  // namespace strata::topo
