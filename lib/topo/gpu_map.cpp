#include "topo/gpu_map.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>

#include "strata/errors.hpp"

namespace strata::topo {

std::string normalized_bus_id(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return out;
}

namespace {

const GpuInfo* hwloc_gpu(const GpuNodeView& node, const std::string& bus_id) {
  for (const GpuInfo& gpu : node.gpus)
    if (normalized_bus_id(gpu.pci_bus_id) == bus_id) return &gpu;
  return nullptr;
}

// Indexes into `devices` whose GPU sits on one of `numa`.
std::vector<int> near_devices(const GpuNodeView& node, const std::vector<std::string>& devices,
                              const std::vector<int>& numa) {
  std::vector<int> near;
  for (std::size_t i = 0; i < devices.size(); ++i) {
    const GpuInfo* gpu = hwloc_gpu(node, devices[i]);
    if (gpu && gpu->numa >= 0 && std::find(numa.begin(), numa.end(), gpu->numa) != numa.end())
      near.push_back(int(i));
  }
  return near;
}

struct Pick {
  int index = -1;  // into `devices`
  bool near = false;
};

// Rule 3 over `devices` (lower-case bus ids).
Pick pick_nearest(const GpuNodeView& node, int local_rank, const std::vector<std::string>& devices) {
  if (devices.empty()) return {};
  std::vector<int> all(devices.size());
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = int(i);
  const auto near_of = [&](int local) {
    return std::size_t(local) < node.rank_numa.size()
               ? near_devices(node, devices, node.rank_numa[std::size_t(local)])
               : std::vector<int>{};
  };
  const auto set_of = [&](int local) {
    std::vector<int> near = near_of(local);
    return near.empty() ? all : near;
  };
  const std::vector<int> near = near_of(local_rank);
  const std::vector<int> mine = near.empty() ? all : near;
  // Share the set out among the local ranks before me that have the same one.
  std::size_t position = 0;
  for (int other = 0; other < local_rank; ++other)
    if (set_of(other) == mine) ++position;
  return {mine[position % mine.size()], !near.empty()};
}

std::string numa_of(const GpuNodeView& node, const std::string& bus_id) {
  const GpuInfo* gpu = hwloc_gpu(node, bus_id);
  return gpu && gpu->numa >= 0 ? fmt::format("NUMA {}", gpu->numa) : std::string("NUMA ?");
}

}  // namespace

std::vector<int> parse_gpu_map(std::string_view text) {
  std::vector<int> map;
  if (text.empty()) return map;
  std::size_t at = 0;
  while (true) {
    const std::size_t comma = std::min(text.find(',', at), text.size());
    const std::string_view item = text.substr(at, comma - at);
    int device = -1;
    const auto [end, error] = std::from_chars(item.data(), item.data() + item.size(), device);
    if (item.empty() || error != std::errc() || end != item.data() + item.size() || device < 0)
      throw InvalidArgument(fmt::format(
          "STRATA_GPU_MAP = '{}': '{}' is not a device index; expected comma-separated CUDA device indexes by "
          "local rank, e.g. \"0,1,2,3\"",
          text, item));
    map.push_back(device);
    if (comma == text.size()) break;
    at = comma + 1;
  }
  return map;
}

GpuAssignment assign_gpu(const GpuNodeView& node, int local_rank, std::span<const std::string> cuda_bus_ids,
                         std::string_view gpu_map) {
  std::vector<std::string> cuda;
  for (const std::string& id : cuda_bus_ids) cuda.push_back(normalized_bus_id(id));
  GpuAssignment out;

  if (!gpu_map.empty()) {
    std::vector<int> map;
    try {
      map = parse_gpu_map(gpu_map);
    } catch (const InvalidArgument& e) {
      out.how = e.what();
      return out;
    }
    if (std::size_t(local_rank) >= map.size()) {
      out.how = fmt::format("STRATA_GPU_MAP = '{}' names {} device(s), but local rank {} needs one", gpu_map,
                            map.size(), local_rank);
      return out;
    }
    const int device = map[std::size_t(local_rank)];
    if (device >= int(cuda.size())) {
      out.how = fmt::format("STRATA_GPU_MAP = '{}' gives local rank {} CUDA device {}, but this process sees {} "
                            "CUDA device(s)",
                            gpu_map, local_rank, device, cuda.size());
      return out;
    }
    out.cuda_device = device;
    out.pci_bus_id = cuda[std::size_t(device)];
    out.how = "STRATA_GPU_MAP";
    return out;
  }

  if (cuda.empty()) {
    std::vector<std::string> hwloc;
    for (const GpuInfo& gpu : node.gpus) hwloc.push_back(normalized_bus_id(gpu.pci_bus_id));
    const Pick pick = pick_nearest(node, local_rank, hwloc);
    out.how = "no CUDA device visible to this process";
    if (pick.index >= 0) {
      out.pci_bus_id = hwloc[std::size_t(pick.index)];
      out.how += fmt::format(" (hwloc's choice would be {})", out.pci_bus_id);
    }
    return out;
  }

  const Pick pick = pick_nearest(node, local_rank, cuda);
  out.cuda_device = pick.index;
  out.pci_bus_id = cuda[std::size_t(pick.index)];
  out.how = pick.near ? fmt::format("nearest: {}", numa_of(node, out.pci_bus_id))
                      : std::string("round robin: no GPU on the rank's NUMA domains");
  return out;
}

}  // namespace strata::topo
