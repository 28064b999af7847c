// Which all_reduce plans strata-tune measures on a layout.
#pragma once

#include <string>
#include <vector>

namespace tune {

// The candidates on `nodes` nodes: every registered host algorithm, plus
// name#M for each M in `shards` (M > 1) where the algorithm uses shards
// (AlgorithmInfo::shards); on several nodes also every a/b[#M] with a a
// shared-memory algorithm (every host algorithm when `every_intra`) and b
// any of the flat ones. On nodes of one rank a is never run (no step inside
// the node), so one a stands for all. In registry order, no duplicates.
std::vector<std::string> candidate_plans(int nodes, int min_ranks_per_node, const std::vector<int>& shards,
                                         bool every_intra);

}  // namespace tune
