#include "topo/advice.hpp"

#include <fmt/format.h>

#include <atomic>
#include <map>
#include <string_view>

#include "util/log.hpp"
#include "util/ranges.hpp"
#include "util/where.hpp"

namespace strata::topo {
namespace {

constexpr const char* kFix = "launch with `mpirun --bind-to core --map-by numa` (Open MPI) or `srun --cpu-bind=cores` (Slurm)";

// The ranks that share their host with another rank and meet `predicate`
// (by host name: virtual nodes on one host share it too).
std::vector<int> ranks_where(const Topology& topology, bool (*predicate)(const Topology&, const RankInfo&)) {
  std::map<std::string_view, int> on_host;
  for (const RankInfo& r : topology.ranks) ++on_host[r.hostname];
  std::vector<int> ranks;
  for (const RankInfo& r : topology.ranks)
    if (on_host[r.hostname] > 1 && predicate(topology, r)) ranks.push_back(r.rank);
  return ranks;
}

// Whether this process speaks for the job (see warn_about_binding_once).
bool speaks_for_the_job() { return util::world_rank() == 0; }

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
  if (util::log_level() < util::LogLevel::warn || warned.load() || !speaks_for_the_job()) return;
  const std::vector<std::string> lines = binding_advice(topology);
  if (lines.empty() || warned.exchange(true)) return;  // a well-bound communicator does not use up the warning
  for (const std::string& line : lines) util::log(util::LogLevel::warn, "{}", line);
}

std::string gpu_sharing_advice(const Topology& topology) {
  std::size_t nodes_sharing = 0;
  std::string example;
  for (std::size_t n = 0; n < topology.nodes.size(); ++n) {
    const NodeInfo& node = topology.nodes[n];
    std::map<std::string, std::vector<int>> ranks_on;  // bus id -> ranks of this node driving it
    for (const int r : node.ranks) {
      const GpuAssignment& gpu = topology.ranks.at(static_cast<std::size_t>(r)).gpu;
      if (gpu.cuda_device >= 0 && !gpu.pci_bus_id.empty()) ranks_on[gpu.pci_bus_id].push_back(r);
    }
    bool shares = false;
    for (const auto& [bus_id, ranks] : ranks_on) {
      if (ranks.size() < 2) continue;
      shares = true;
      if (example.empty())
        example = fmt::format("on node {} ({}), ranks {} drive GPU {} (rank {}: {})", n, node.hostname,
                              util::ranges(ranks), bus_id, ranks[0],
                              topology.ranks[static_cast<std::size_t>(ranks[0])].gpu.how);
    }
    nodes_sharing += shares;
  }
  if (nodes_sharing == 0) return "";
  return fmt::format(
      "ranks share a GPU on {} of {} nodes; {}. NCCL refuses two ranks on one GPU, so CUDA collectives inside "
      "those nodes run psgpu or host algorithms through pinned copies; run at most one rank per GPU on a node, or "
      "choose devices with STRATA_GPU_MAP",
      nodes_sharing, topology.nodes.size(), example);
}

void warn_about_shared_gpus_once(const Topology& topology) {
  static std::atomic<bool> warned{false};
  if (util::log_level() < util::LogLevel::warn || warned.load() || !speaks_for_the_job()) return;
  const std::string line = gpu_sharing_advice(topology);
  if (line.empty() || warned.exchange(true)) return;  // a communicator without sharing does not use up the warning
  util::log(util::LogLevel::warn, "{}", line);
}

}  // namespace strata::topo
