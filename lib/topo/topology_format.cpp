// to_text and to_json for a Topology. JSON is written by hand (the library
// does not link a JSON library); only strings need care, and they are
// escaped per RFC 8259.
#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

#include "strata/topology.hpp"
#include "topo/advice.hpp"
#include "util/json.hpp"
#include "util/ranges.hpp"

namespace strata {
namespace {

std::string plural(long long n, const char* one, const char* many) {
  return fmt::format("{} {}", n, n == 1 ? one : many);
}

std::string json_ints(const std::vector<int>& values) {
  std::string out = "[";
  for (std::size_t i = 0; i < values.size(); ++i) out += fmt::format("{}{}", i ? "," : "", values[i]);
  return out + "]";
}

// "CUDA device 1 (0000:3b:00.0, nearest: NUMA 0)" or "no GPU (why)".
std::string gpu_text(const GpuAssignment& gpu) {
  if (gpu.cuda_device < 0) return fmt::format("no GPU ({})", gpu.how);
  return fmt::format("CUDA device {} ({}, {})", gpu.cuda_device, gpu.pci_bus_id, gpu.how);
}

std::string numa_text(int numa) { return numa < 0 ? "NUMA ?" : fmt::format("NUMA {}", numa); }

}  // namespace

std::string to_text(const Topology& t) {
  std::size_t fewest = t.ranks.size(), most = 0;
  for (const NodeInfo& n : t.nodes) {
    fewest = std::min(fewest, n.ranks.size());
    most = std::max(most, n.ranks.size());
  }
  const std::string per_node = fewest == most ? fmt::format("{} per node", most)
                                              : fmt::format("{} to {} per node (unequal)", fewest, most);
  std::string out = fmt::format("{} on {}{}, {}\n", plural(static_cast<long long>(t.ranks.size()), "rank", "ranks"),
                                plural(static_cast<long long>(t.nodes.size()), "node", "nodes"),
                                t.virtual_nodes ? " (virtual: STRATA_RANKS_PER_NODE)" : "", per_node);
  for (std::size_t i = 0; i < t.nodes.size(); ++i) {
    const NodeInfo& n = t.nodes[i];
    out += fmt::format("node {}: {}, ranks {}; {}, {}, {}, {}\n", i, n.hostname, util::ranges(n.ranks),
                       plural(n.packages, "package", "packages"), plural(n.numa_domains, "NUMA domain", "NUMA domains"),
                       plural(n.cores, "core", "cores"),
                       n.gpus.empty() ? std::string("no NVIDIA GPU") : plural(static_cast<long long>(n.gpus.size()), "NVIDIA GPU", "NVIDIA GPUs"));
    for (std::size_t g = 0; g < n.gpus.size(); ++g)
      out += fmt::format("  gpu {}: {} ({})\n", g, n.gpus[g].pci_bus_id, numa_text(n.gpus[g].numa));
    for (const int r : n.ranks) {
      const RankInfo& info = t.ranks[static_cast<std::size_t>(r)];
      const std::string flag = topo::unbound(t, info)      ? " (unbound)"
                               : topo::spans_numa(t, info) ? " (spans NUMA domains)"
                                                           : "";
      out += fmt::format("  rank {} (local {}): cores {}{}, NUMA {}; {}\n", r, info.local_rank,
                         util::ranges(info.bound_cores), flag, util::ranges(info.numa), gpu_text(info.gpu));
    }
  }
  for (const std::string& line : topo::binding_advice(t)) out += fmt::format("advice: {}\n", line);
  if (const std::string line = topo::gpu_sharing_advice(t); !line.empty()) out += fmt::format("advice: {}\n", line);
  return out;
}

std::string to_json(const Topology& t) {
  std::string out = fmt::format("{{\"virtual_nodes\":{},\"nodes\":[", t.virtual_nodes ? "true" : "false");
  for (std::size_t i = 0; i < t.nodes.size(); ++i) {
    const NodeInfo& n = t.nodes[i];
    out += fmt::format("{}{{\"index\":{},\"hostname\":{},\"ranks\":{},\"packages\":{},\"numa_domains\":{},\"cores\":{},\"gpus\":[",
                       i ? "," : "", i, util::json_string(n.hostname), json_ints(n.ranks), n.packages, n.numa_domains,
                       n.cores);
    for (std::size_t g = 0; g < n.gpus.size(); ++g)
      out += fmt::format("{}{{\"pci_bus_id\":{},\"numa\":{}}}", g ? "," : "", util::json_string(n.gpus[g].pci_bus_id),
                         n.gpus[g].numa);
    out += "]}";
  }
  out += "],\"ranks\":[";
  for (std::size_t i = 0; i < t.ranks.size(); ++i) {
    const RankInfo& r = t.ranks[i];
    out += fmt::format(
        "{}{{\"rank\":{},\"node\":{},\"local_rank\":{},\"hostname\":{},\"bound_cores\":{},\"numa\":{},\"unbound\":{},"
        "\"gpu\":{{\"cuda_device\":{},\"pci_bus_id\":{},\"how\":{}}}}}",
        i ? "," : "", r.rank, r.node, r.local_rank, util::json_string(r.hostname), json_ints(r.bound_cores),
        json_ints(r.numa), topo::unbound(t, r) ? "true" : "false", r.gpu.cuda_device, util::json_string(r.gpu.pci_bus_id),
        util::json_string(r.gpu.how));
  }
  return out + "]}";
}

}  // namespace strata
