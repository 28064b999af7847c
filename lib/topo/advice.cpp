#include "topo/advice.hpp"

#include <fmt/format.h>
#include <mpi.h>

#include <atomic>
#include <map>
#include <string_view>

#include "util/log.hpp"
#include "util/ranges.hpp"
#include "util/where.hpp"

namespace strata::topo {
namespace {

// Slurm's words, which hold whichever MPI srun starts.
constexpr const char* kSlurm = "`srun --cpu-bind=cores` (Slurm)";

// The MPI library this process runs, as MPI_Get_library_version says
// (callable before MPI_Init and after MPI_Finalize); "" where it cannot say.
std::string running_mpi_library() {
  char version[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int length = 0;
  if (MPI_Get_library_version(version, &length) != MPI_SUCCESS || length <= 0) return "";
  return std::string(version, static_cast<std::size_t>(length));
}

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

std::string binding_fix(std::string_view mpi_library_version) {
  const auto says = [&](std::string_view word) { return mpi_library_version.find(word) != std::string_view::npos; };
  // Intel MPI and Cray MPICH say "MPICH" too: they are asked first. Intel's
  // hydra has no -bind-to; it pins through its I_MPI_PIN variables.
  if (says("Intel(R) MPI"))
    return fmt::format("launch with `mpiexec -genv I_MPI_PIN 1 -genv I_MPI_PIN_DOMAIN core` (Intel MPI) or {}",
                       kSlurm);
  if (says("CRAY MPICH") || says("Cray MPICH"))
    return fmt::format("launch with {} or `mpiexec --cpu-bind core` (Cray PALS)", kSlurm);
  if (says("Open MPI")) return fmt::format("launch with `mpirun --bind-to core --map-by numa` (Open MPI) or {}", kSlurm);
  if (says("MPICH") || says("MVAPICH"))
    return fmt::format("launch with `mpiexec -bind-to core` (MPICH's hydra) or {}", kSlurm);
  return fmt::format(
      "launch with your MPI launcher's binding option (Open MPI: `mpirun --bind-to core --map-by numa`; MPICH's "
      "hydra: `mpiexec -bind-to core`) or {}",
      kSlurm);
}

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
  const std::vector<int> unbound_ranks = ranks_where(topology, unbound);
  const std::vector<int> numa_ranks = ranks_where(topology, spans_numa);
  if (unbound_ranks.empty() && numa_ranks.empty()) return lines;
  const std::string fix = binding_fix(running_mpi_library());
  if (const std::vector<int>& ranks = unbound_ranks; !ranks.empty())
    lines.push_back(fmt::format(
        "{} of {} ranks are not bound to cores (ranks {}): the OS may move them between cores and NUMA domains, "
        "which costs cache and memory locality and makes timings noisy; {}",
        ranks.size(), total, util::ranges(ranks), fix));
  if (const std::vector<int>& ranks = numa_ranks; !ranks.empty())
    lines.push_back(fmt::format(
        "{} of {} ranks are bound to cores in more than one NUMA domain (ranks {}): their memory may sit in the "
        "far domain; {}",
        ranks.size(), total, util::ranges(ranks), fix));
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
