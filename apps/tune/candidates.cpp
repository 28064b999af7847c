#include "candidates.hpp"

#include <algorithm>

#include "strata/spec.hpp"

namespace tune {

std::vector<std::string> candidate_plans(int nodes, int min_ranks_per_node, const std::vector<int>& shards,
                                         bool every_intra) {
  std::vector<strata::AlgorithmInfo> host;
  for (const auto& a : strata::registered_algorithms())
    if (a.memory == strata::Memory::host) host.push_back(a);
  // b with its shard counts: "xring", "xring#2", ...
  std::vector<std::string> flat;
  for (const auto& a : host)
    for (int m : shards)
      if (m == 1 || a.shards) flat.push_back(m == 1 ? a.name : a.name + "#" + std::to_string(m));
  std::vector<std::string> plans = flat;
  if (nodes > 1)
    for (const auto& a : host) {
      if (!every_intra && !a.shared_memory) continue;
      for (const auto& b : flat) plans.push_back(a.name + "/" + b);
      if (min_ranks_per_node <= 1) break;  // a does not run: one stands for all
    }
  std::vector<std::string> unique;
  for (auto& p : plans)
    if (std::find(unique.begin(), unique.end(), p) == unique.end()) unique.push_back(p);
  return unique;
}

}  // namespace tune
