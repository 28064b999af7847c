// Which CUDA device each rank's CUDA tensors default to. A pure function of
// what topology discovery already gathered (the node's GPUs and NUMA
// domains from hwloc, every local rank's binding and the CUDA devices, by
// PCI bus id, that its process sees) plus the rank's STRATA_GPU_MAP, so it
// is tested without a GPU and every rank computes every other rank's
// assignment the same way.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "strata/topology.hpp"

namespace strata::topo {

// A PCI bus id as strata compares them: lower case (CUDA and hwloc differ
// in case).
std::string normalized_bus_id(std::string_view text);

// Parse STRATA_GPU_MAP text: comma-separated CUDA device indexes by local
// rank ("0,1,2,3"). Empty text -> empty map. Throws InvalidArgument naming
// the text and the bad item.
std::vector<int> parse_gpu_map(std::string_view text);

// What assign_gpu needs to know about one node.
struct GpuNodeView {
  std::span<const GpuInfo> gpus;                // hwloc's NVIDIA GPUs of the node, PCI order
  std::span<const std::vector<int>> rank_numa;  // NUMA domains each local rank is bound to, by local rank
  // PCI bus ids (any case) of the CUDA devices each local rank's process
  // sees, by local rank: they differ where each rank has its own
  // CUDA_VISIBLE_DEVICES. A local rank without an entry (all of them when
  // empty) is taken to see what the assigned rank sees.
  std::span<const std::vector<std::string>> rank_cuda = {};
};

// The assignment of local rank `local_rank`, given the CUDA devices its
// process sees (`cuda_bus_ids[i]` = PCI bus id of CUDA device i, any case;
// empty when CUDA sees none or this build has no CUDA) and its
// STRATA_GPU_MAP text. Rules, first that applies:
//   1. STRATA_GPU_MAP set: map[local_rank]. A bad map, one too short for the
//      local rank, or an index CUDA does not have gives cuda_device = -1 and
//      the reason in `how` (the error is raised when a CUDA tensor needs it,
//      not at construction, so host-only programs are unaffected).
//   2. No CUDA device visible: cuda_device = -1; pci_bus_id names the GPU
//      hwloc puts nearest (rule 3 over hwloc's GPUs), for strata-topo.
//   3. Every local rank its own device while there are enough: the node's
//      local ranks are seated in local-rank order, each on a device with
//      room, one on its own NUMA domains first (hwloc GPU with a known NUMA
//      domain among the rank's: "nearest: NUMA n"), then the least used,
//      then the lowest CUDA index ("elsewhere: NUMA n (...)" once the near
//      ones are taken; "round robin: ..." for a rank with none near). With
//      n local ranks that see a device and d distinct devices, every device
//      has room for n / d ranks and n % d of them for one more, so ranks
//      share only when n > d, or when every device a rank's process sees
//      is full (one CUDA_VISIBLE_DEVICES per rank, overlapping). A rank
//      that shares gets "; shares it with local rank(s) L: why" appended
//      to `how`.
// Rule 3 seats every local rank of the node (rank_numa's and rank_cuda's
// size, at least local_rank + 1) from the view, with `cuda_bus_ids` for
// local_rank, so every rank computes the same seating for the node. It
// assumes that no local rank uses STRATA_GPU_MAP when this one does not
// (the variable is set per job).
// Never throws.
GpuAssignment assign_gpu(const GpuNodeView& node, int local_rank, std::span<const std::string> cuda_bus_ids,
                         std::string_view gpu_map);

}  // namespace strata::topo
