#include "topo/gpu_plane.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <map>
#include <utility>

#include "strata/errors.hpp"
#include "util/where.hpp"

namespace strata::topo {
namespace {

// One GPU as NCCL tells GPUs apart.
using GpuKey = std::pair<std::string, std::string>;  // (host identity, bus id)

std::string describe_member(int rank, int replica) {
  return replica < 0 ? fmt::format("rank {}", rank) : fmt::format("rank {} (replica {})", rank, replica);
}

// The first two members of a group that drive one GPU, as a verdict.
// `members` lists (rank, replica or -1, device) in NCCL rank order.
struct Member {
  int rank;
  int replica;  // -1: the rank's own device
  int device;
};
NcclVerdict distinct_gpus(std::span<const GpuRow> rows, std::span<const Member> members, std::string_view group) {
  std::map<GpuKey, std::size_t> seen;
  for (std::size_t i = 0; i < members.size(); ++i) {
    const Member& m = members[i];
    const GpuRow& row = rows[std::size_t(m.rank)];
    const GpuKey key{row.host, row.bus_of(m.device)};
    const auto [at, fresh] = seen.emplace(key, i);
    if (fresh) continue;
    const Member& first = members[at->second];
    return {false,
            fmt::format("{} and {} both drive GPU {} on host {}, and NCCL needs one GPU per NCCL rank, so the {} "
                        "NCCL communicator cannot be created",
                        describe_member(first.rank, first.replica), describe_member(m.rank, m.replica),
                        key.second, row.hostname, group)};
  }
  return {};
}

bool exclusive(int mode) { return mode == kComputeExclusiveProcess || mode == kComputeExclusiveThread; }

}  // namespace

std::string GpuRow::bus_of(int index) const {
  return index >= 0 && std::size_t(index) < bus_ids.size() ? bus_ids[std::size_t(index)] : std::string();
}

void GpuPlane::apply_to(plan::Layout& layout) const {
  // Without GPUs no CUDA call runs; plans then show what a cluster where
  // NCCL may run everywhere would run (algorithm_for, strata-topo).
  if (!unavailable.empty()) return;
  layout.nccl_world = world.usable;
  layout.nccl_node = node.usable;
  layout.nccl_cross = cross.usable;
}

std::string GpuPlane::refusal(const plan::Choice& choice) const {
  if (!choice.algorithm) return "";
  const auto refused = [](const NcclVerdict& verdict, const plan::Algorithm& level, std::string_view where) {
    return level.nccl && !verdict.usable
               ? fmt::format("{} runs NCCL {}, but {}", level.name, where, verdict.why)
               : std::string();
  };
  if (choice.shape == plan::Shape::flat) return refused(world, *choice.algorithm, "over every rank");
  std::string why = refused(node, *choice.algorithm, "inside each node");
  if (why.empty() && choice.cross) why = refused(cross, *choice.cross, "across nodes");
  return why;
}

GpuPlane decide(std::span<const GpuRow> rows, int min_local_size) {
  GpuPlane plane;
  // 1. Every rank needs a device it may use. The lowest rank without one
  //    speaks for all (every rank computes the same text).
  for (std::size_t r = 0; r < rows.size() && plane.unavailable.empty(); ++r) {
    const GpuRow& row = rows[r];
    if (row.device < 0)
      plane.unavailable = fmt::format("rank {} (host {}) has no GPU: {}", r, row.hostname,
                                      row.problem.empty() ? "no CUDA device assigned" : row.problem);
    else if (std::size_t(row.device) < row.modes.size() && row.modes[std::size_t(row.device)] == kComputeProhibited)
      plane.unavailable = fmt::format("rank {} (host {}): its GPU {} is in PROHIBITED compute mode (no process may "
                                      "use it; nvidia-smi -c DEFAULT allows it)",
                                      r, row.hostname, row.bus_of(row.device));
  }
  // 2. A GPU in exclusive-process mode takes one process: two ranks on it
  //    would fail when the second creates its CUDA context.
  std::map<GpuKey, std::size_t> owner;
  for (std::size_t r = 0; r < rows.size() && plane.unavailable.empty(); ++r) {
    const GpuRow& row = rows[r];
    const GpuKey key{row.host, row.bus_of(row.device)};
    const auto [at, fresh] = owner.emplace(key, r);
    if (!fresh && std::size_t(row.device) < row.modes.size() && exclusive(row.modes[std::size_t(row.device)]))
      plane.unavailable = fmt::format(
          "ranks {} and {} share GPU {} on host {}, which is in EXCLUSIVE_PROCESS compute mode: only one process "
          "may use it. Run one rank per GPU (STRATA_GPU_MAP, CUDA_VISIBLE_DEVICES) or set the GPU to DEFAULT "
          "compute mode (nvidia-smi -c DEFAULT)",
          at->second, r, key.second, row.hostname);
  }
  if (!plane.unavailable.empty()) {
    plane.world = plane.node = plane.cross = {false, plane.unavailable};
    return plane;
  }

  // 3. NCCL over each kind of group.
  std::vector<Member> members;
  for (std::size_t r = 0; r < rows.size(); ++r) members.push_back({int(r), -1, rows[r].device});
  plane.world = distinct_gpus(rows, members, "whole-communicator");
  // Nodes and cross-node groups: the first refusing group speaks for all,
  // since every rank must plan the same.
  std::map<int, std::vector<Member>> nodes, crosses;
  for (const Member& m : members) {
    const GpuRow& row = rows[std::size_t(m.rank)];
    nodes[row.node].push_back(m);
    if (row.local_rank < min_local_size) crosses[row.local_rank].push_back(m);
  }
  for (const auto& [index, group] : nodes)
    if (plane.node.usable) plane.node = distinct_gpus(rows, group, fmt::format("node-local (node {})", index));
  for (const auto& [local, group] : crosses)
    if (plane.cross.usable)
      plane.cross = distinct_gpus(rows, group, fmt::format("cross-node (local rank {})", local));
  return plane;
}

ReplicaPlane decide_replicas(std::span<const GpuRow> rows, std::span<const std::vector<int>> devices) {
  ReplicaPlane out;
  std::size_t fewest = devices.empty() ? 0 : devices[0].size(), most = fewest;
  for (const std::vector<int>& d : devices) fewest = std::min(fewest, d.size()), most = std::max(most, d.size());
  if (fewest != most) {
    out.mismatch = fmt::format("ranks hold between {} and {} CUDA replicas; every rank must pass the same number "
                               "(num_gpus_per_worker)",
                               fewest, most);
    out.nccl = {false, out.mismatch};
    return out;
  }
  std::vector<Member> members;
  for (std::size_t r = 0; r < devices.size() && out.invalid.empty(); ++r)
    for (std::size_t i = 0; i < devices[r].size(); ++i) {
      const int device = devices[r][i];
      if (device < 0 || std::size_t(device) >= rows[r].bus_ids.size()) {
        out.invalid = fmt::format("rank {} (host {}) puts replica {} on CUDA device {}, but its process sees {} "
                                  "CUDA device(s)",
                                  r, rows[r].hostname, i, device, rows[r].bus_ids.size());
        break;
      }
      members.push_back({int(r), int(i), device});
    }
  if (!out.invalid.empty()) {
    out.nccl = {false, out.invalid};
    return out;
  }
  out.nccl = distinct_gpus(rows, members, "replica");
  return out;
}

double setup_seconds() {
  constexpr double kDefault = 300;  // NCCL's bootstrap of thousands of ranks takes tens of seconds
  const char* text = std::getenv("STRATA_GPU_SETUP_TIMEOUT");
  if (!text || !*text) return kDefault;
  char* end = nullptr;
  const double seconds = std::strtod(text, &end);
  if (end == text || *end != '\0' || !std::isfinite(seconds) || seconds <= 0)
    throw InvalidArgument(
        util::located(fmt::format("STRATA_GPU_SETUP_TIMEOUT = '{}' must be a number of seconds > 0 (the bound "
                                  "of GPU setup steps; default {})",
                                  text, kDefault)));
  return seconds;
}

std::string host_identity() {
  // NCCL_HOSTID replaces the whole identity (NCCL's getHostHash does the same).
  if (const char* id = std::getenv("NCCL_HOSTID"); id && *id) return id;
  return util::hostname() + util::boot_id();
}

}  // namespace strata::topo
