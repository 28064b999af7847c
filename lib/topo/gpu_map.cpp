#include "topo/gpu_map.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <map>
#include <tuple>

#include "strata/errors.hpp"
#include "util/ranges.hpp"
#include "util/where.hpp"

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

// Whether the GPU `bus_id` sits on one of `numa`.
bool is_near(const GpuNodeView& node, const std::string& bus_id, const std::vector<int>& numa) {
  const GpuInfo* gpu = hwloc_gpu(node, bus_id);
  return gpu && gpu->numa >= 0 && std::find(numa.begin(), numa.end(), gpu->numa) != numa.end();
}

// The local ranks that see a CUDA device, and the distinct devices they see.
struct Demand {
  int ranks = 0;
  std::vector<std::string> devices;
};

Demand demand_of(const std::vector<std::vector<std::string>>& visible) {
  Demand demand;
  for (const std::vector<std::string>& devices : visible) {
    demand.ranks += !devices.empty();
    for (const std::string& id : devices)
      if (std::find(demand.devices.begin(), demand.devices.end(), id) == demand.devices.end())
        demand.devices.push_back(id);
  }
  return demand;
}

const std::vector<int>& numa_of_rank(const GpuNodeView& node, int local_rank) {
  static const std::vector<int> unknown;
  return std::size_t(local_rank) < node.rank_numa.size() ? node.rank_numa[std::size_t(local_rank)] : unknown;
}

// Where one local rank sits under rule 3.
struct Seat {
  int index = -1;         // into the devices that rank sees; -1 = it sees none
  bool near = false;      // on one of the rank's NUMA domains
  bool any_near = false;  // the rank has some device on its NUMA domains
};

// Rule 3 for every local rank of the node, in local-rank order, from what
// each sees (`visible[l]`: lower-case bus ids by CUDA index). With n ranks
// that see a device and d distinct devices among them, every device serves
// n / d ranks, n % d of them one more (so n <= d gives every rank its own);
// each rank takes, among the devices with room, a near one first, then the
// one with the fewest ranks, then the lowest CUDA index. A rank whose
// devices are all full (ranks that see different sets) takes one of them
// anyway, in the same order.
std::vector<Seat> seat_ranks(const GpuNodeView& node, const std::vector<std::vector<std::string>>& visible) {
  const Demand demand = demand_of(visible);
  std::vector<Seat> seats(visible.size());
  if (demand.devices.empty()) return seats;
  const int base = demand.ranks / int(demand.devices.size()), extra = demand.ranks % int(demand.devices.size());
  std::map<std::string, int> users;
  int above_base = 0;  // devices that took one of the `extra` places
  for (std::size_t l = 0; l < visible.size(); ++l) {
    const std::vector<std::string>& devices = visible[l];
    const std::vector<int>& numa = numa_of_rank(node, int(l));
    std::tuple<bool, bool, int, int> best{};
    for (std::size_t i = 0; i < devices.size(); ++i) {
      const int used = users[devices[i]];
      const bool room = used < base || (used == base && above_base < extra);
      const bool near = is_near(node, devices[i], numa);
      seats[l].any_near = seats[l].any_near || near;
      const std::tuple<bool, bool, int, int> key{!room, !near, used, int(i)};
      if (seats[l].index < 0 || key < best) seats[l].index = int(i), seats[l].near = near, best = key;
    }
    if (seats[l].index >= 0 && users[devices[std::size_t(seats[l].index)]]++ == base) ++above_base;
  }
  return seats;
}

// The local ranks other than `local_rank` seated on `bus_id`.
std::vector<int> seated_on(const std::vector<Seat>& seats, const std::vector<std::vector<std::string>>& visible,
                           const std::string& bus_id, int local_rank) {
  std::vector<int> ranks;
  for (std::size_t l = 0; l < seats.size(); ++l)
    if (int(l) != local_rank && seats[l].index >= 0 && visible[l][std::size_t(seats[l].index)] == bus_id)
      ranks.push_back(int(l));
  return ranks;
}

std::string numa_of(const GpuNodeView& node, const std::string& bus_id) {
  const GpuInfo* gpu = hwloc_gpu(node, bus_id);
  return gpu && gpu->numa >= 0 ? fmt::format("NUMA {}", gpu->numa) : std::string("NUMA ?");
}

// `how` for a rank seated by rule 3 on visible[local_rank][seat.index].
std::string how_seated(const GpuNodeView& node, const std::vector<Seat>& seats,
                       const std::vector<std::vector<std::string>>& visible, int local_rank) {
  const Seat& seat = seats[std::size_t(local_rank)];
  const std::vector<std::string>& mine = visible[std::size_t(local_rank)];
  const std::string& bus_id = mine[std::size_t(seat.index)];
  std::string how;
  if (seat.near) {
    how = fmt::format("nearest: {}", numa_of(node, bus_id));
  } else if (seat.any_near) {
    // Its near GPUs are full: name the ranks that have them.
    std::vector<int> holders;
    for (const std::string& id : mine)
      if (is_near(node, id, numa_of_rank(node, local_rank)))
        for (const int other : seated_on(seats, visible, id, local_rank)) holders.push_back(other);
    std::sort(holders.begin(), holders.end());
    how = fmt::format("elsewhere: {} (the GPUs on the rank's NUMA domains went to local rank{} {})",
                      numa_of(node, bus_id), holders.size() > 1 ? "s" : "", util::ranges(holders));
  } else {
    how = "round robin: no GPU on the rank's NUMA domains";
  }
  const std::vector<int> sharing = seated_on(seats, visible, bus_id, local_rank);
  if (sharing.empty()) return how;
  const Demand demand = demand_of(visible);
  const std::string why = demand.ranks > int(demand.devices.size())
                              ? fmt::format("{} local ranks on {} GPU{}", demand.ranks, demand.devices.size(),
                                            demand.devices.size() == 1 ? "" : "s")
                              : std::string("the CUDA devices their processes see overlap (CUDA_VISIBLE_DEVICES)");
  return fmt::format("{}; shares it with local rank{} {}: {} (NCCL cannot run between ranks that share a GPU)", how,
                     sharing.size() > 1 ? "s" : "", util::ranges(sharing), why);
}

// What every local rank of the node sees, lower case: `mine` for
// `local_rank`, the view's rank_cuda for the others (`mine` where it has
// no entry).
std::vector<std::vector<std::string>> visible_devices(const GpuNodeView& node, int local_rank,
                                                      const std::vector<std::string>& mine) {
  const std::size_t count = std::max({node.rank_numa.size(), node.rank_cuda.size(), std::size_t(local_rank) + 1});
  std::vector<std::vector<std::string>> visible(count, mine);
  for (std::size_t l = 0; l < node.rank_cuda.size(); ++l) {
    if (int(l) == local_rank) continue;
    visible[l].clear();
    for (const std::string& id : node.rank_cuda[l]) visible[l].push_back(normalized_bus_id(id));
  }
  return visible;
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
      throw InvalidArgument(util::located(fmt::format(
          "STRATA_GPU_MAP = '{}': '{}' is not a device index; expected comma-separated CUDA device indexes by "
          "local rank, e.g. \"0,1,2,3\"",
          text, item)));
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
      out.how = util::unlocated(e.what());
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
    // What rule 3 would do if every local rank saw hwloc's GPUs.
    std::vector<std::string> hwloc;
    for (const GpuInfo& gpu : node.gpus) hwloc.push_back(normalized_bus_id(gpu.pci_bus_id));
    const GpuNodeView hwloc_only{node.gpus, node.rank_numa};
    const std::vector<Seat> seats = seat_ranks(hwloc_only, visible_devices(hwloc_only, local_rank, hwloc));
    const Seat& seat = seats[std::size_t(local_rank)];
    out.how = "no CUDA device visible to this process";
    if (seat.index >= 0) {
      out.pci_bus_id = hwloc[std::size_t(seat.index)];
      out.how += fmt::format(" (hwloc's choice would be {})", out.pci_bus_id);
    }
    return out;
  }

  const std::vector<std::vector<std::string>> visible = visible_devices(node, local_rank, cuda);
  const std::vector<Seat> seats = seat_ranks(node, visible);
  out.cuda_device = seats[std::size_t(local_rank)].index;
  out.pci_bus_id = cuda[std::size_t(out.cuda_device)];
  out.how = how_seated(node, seats, visible, local_rank);
  return out;
}

}  // namespace strata::topo
