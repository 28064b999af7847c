#include "topo/advice.hpp"

#include <fmt/format.h>

#include <atomic>

#include "util/log.hpp"
#include "util/ranges.hpp"

namespace strata::topo {
namespace {

constexpr const char* kFix = "launch with `mpirun --bind-to core --map-by numa` (Open MPI) or `srun --cpu-bind=cores` (Slurm)";

std::vector<int> ranks_where(const Topology& topology, bool (*predicate)(const Topology&, const RankInfo&)) {
  std::vector<int> ranks;
  for (const RankInfo& r : topology.ranks)
    if (predicate(topology, r)) ranks.push_back(r.rank);
  return ranks;
}

}  // namespace

bool unbound(const Topology& topology, const RankInfo& rank) {
  const NodeInfo& node = topology.nodes.at(static_cast<std::size_t>(rank.node));
  return node.cores > 1 && static_cast<int>(rank.bound_cores.size()) >= node.cores;
}

bool spans_numa(const Topology& topology, const RankInfo& rank) {
  return rank.numa.size() > 1 && !unbound(topology, rank);
}

std::vector<std::string> binding_advice(const Topology& topology) {
  std::vector<std::string> lines;
  const int total = static_cast<int>(topology.ranks.size());
  if (const std::vector<int> ranks = ranks_where(topology, unbound); !ranks.empty())
    lines.push_back(fmt::format(
        "{} of {} ranks are not bound to cores (ranks {}): the OS may move them between cores and NUMA domains, "
        "which costs cache and memory locality and makes timings noisy; {}",
        ranks.size(), total, util::ranges(ranks), kFix));
  if (const std::vector<int> ranks = ranks_where(topology, spans_numa); !ranks.empty())
    lines.push_back(fmt::format(
        "{} of {} ranks are bound to cores in more than one NUMA domain (ranks {}): their memory may sit in the "
        "far domain; {}",
        ranks.size(), total, util::ranges(ranks), kFix));
  return lines;
}

void warn_about_binding_once(const Topology& topology) {
  static std::atomic<bool> warned{false};
  if (util::log_level() < util::LogLevel::warn || warned.load()) return;
  const std::vector<std::string> lines = binding_advice(topology);
  if (lines.empty() || warned.exchange(true)) return;  // a well-bound communicator does not use up the warning
  for (const std::string& line : lines) util::log(util::LogLevel::warn, "{}", line);
}

}  // namespace strata::topo
