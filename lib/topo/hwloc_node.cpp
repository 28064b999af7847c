#include "topo/hwloc_node.hpp"

#include <hwloc.h>

#include <fmt/format.h>

#include <cstdlib>
#include <utility>

#include "strata/errors.hpp"
#include "util/where.hpp"

namespace strata::topo {
namespace {

constexpr unsigned kNvidiaVendor = 0x10de;
constexpr unsigned kDisplayClass = 0x03;  // PCI base class: VGA (0x0300) and 3D (0x0302) controllers

// An hwloc bitmap that frees itself.
struct Bitmap {
  hwloc_bitmap_t set = hwloc_bitmap_alloc();
  Bitmap() = default;
  Bitmap(const Bitmap&) = delete;
  Bitmap& operator=(const Bitmap&) = delete;
  ~Bitmap() { hwloc_bitmap_free(set); }
};

// The NUMA domain whose memory is nearest to `obj` (a PCI device): its first
// non-I/O ancestor's single NUMA node, or -1 when that ancestor spans several
// (hwloc could not place the device) or none.
int numa_of(hwloc_topology_t topology, hwloc_obj_t obj) {
  const hwloc_obj_t ancestor = hwloc_get_non_io_ancestor_obj(topology, obj);
  if (!ancestor || !ancestor->nodeset || hwloc_bitmap_weight(ancestor->nodeset) != 1) return -1;
  for (hwloc_obj_t numa = nullptr; (numa = hwloc_get_next_obj_by_type(topology, HWLOC_OBJ_NUMANODE, numa));)
    if (hwloc_bitmap_isset(ancestor->nodeset, numa->os_index)) return static_cast<int>(numa->logical_index);
  return -1;
}

}  // namespace

struct HwlocNode::State {
  hwloc_topology_t topology = nullptr;
  ~State() {
    if (topology) hwloc_topology_destroy(topology);
  }
};

HwlocNode::HwlocNode(std::unique_ptr<State> state) : state_(std::move(state)) {}
HwlocNode::HwlocNode(HwlocNode&&) noexcept = default;
HwlocNode& HwlocNode::operator=(HwlocNode&&) noexcept = default;
HwlocNode::~HwlocNode() = default;

namespace {

// Shared by the three loaders: init, keep PCI devices, let `configure` set
// the source and flags, load. Throws Unavailable naming `what`.
template <typename Configure>
hwloc_topology_t load(const char* what, Configure configure) {
  hwloc_topology_t topology = nullptr;
  if (hwloc_topology_init(&topology) != 0)
    throw Unavailable(util::located(fmt::format("hwloc could not initialise a topology ({})", what)));
  // Keep PCI devices (GPUs); bridges only as far as needed to place them.
  hwloc_topology_set_io_types_filter(topology, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
  if (configure(topology) != 0 || hwloc_topology_load(topology) != 0) {
    hwloc_topology_destroy(topology);
    throw Unavailable(util::located(
        fmt::format("hwloc could not read the node's topology ({}); is /sys readable in this container?", what)));
  }
  return topology;
}

}  // namespace

HwlocNode HwlocNode::adopt(void* topology) {
  auto state = std::make_unique<State>();
  state->topology = static_cast<hwloc_topology_t>(topology);
  return HwlocNode(std::move(state));
}

HwlocNode HwlocNode::discover() {
  return adopt(load("this machine", [](hwloc_topology_t) { return 0; }));
}

HwlocNode HwlocNode::from_xml(const std::string& xml) {
  return adopt(load("XML from the node leader", [&](hwloc_topology_t t) {
    // The XML describes this very machine, so binding queries may ask the OS.
    if (hwloc_topology_set_flags(t, HWLOC_TOPOLOGY_FLAG_IS_THISSYSTEM) != 0) return -1;
    return hwloc_topology_set_xmlbuffer(t, xml.data(), static_cast<int>(xml.size()));
  }));
}

HwlocNode HwlocNode::from_foreign_xml(const std::string& xml) {
  return adopt(load("XML", [&](hwloc_topology_t t) {
    return hwloc_topology_set_xmlbuffer(t, xml.data(), static_cast<int>(xml.size()));
  }));
}

std::string HwlocNode::to_xml() const {
  char* buffer = nullptr;
  int length = 0;
  if (hwloc_topology_export_xmlbuffer(state_->topology, &buffer, &length, 0) != 0)
    throw Unavailable(util::located("hwloc could not export the node's topology as XML"));
  // hwloc counts the terminating NUL in `length`.
  std::string xml(buffer, length > 0 ? static_cast<std::size_t>(length - 1) : 0);
  hwloc_free_xmlbuffer(state_->topology, buffer);
  return xml;
}

NodeHardware HwlocNode::hardware() const {
  const hwloc_topology_t t = state_->topology;
  NodeHardware hw;
  hw.packages = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_PACKAGE);
  hw.numa_domains = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_NUMANODE);
  hw.cores = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_CORE);
  if (hw.cores <= 0) hw.cores = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_PU);  // no core level: PUs are the cores
  for (hwloc_obj_t dev = nullptr; (dev = hwloc_get_next_pcidev(t, dev));) {
    const auto& pci = dev->attr->pcidev;
    // NVIDIA also makes audio, USB and NVSwitch functions; only display-class ones are GPUs.
    if (pci.vendor_id != kNvidiaVendor || (pci.class_id >> 8) != kDisplayClass) continue;
    hw.gpus.push_back({fmt::format("{:04x}:{:02x}:{:02x}.{:x}", pci.domain, pci.bus, pci.dev, pci.func),
                       numa_of(t, dev)});
  }
  return hw;
}

Binding HwlocNode::binding() const {
  const hwloc_topology_t t = state_->topology;
  Bitmap bound;
  // The process's binding (all threads); a thread binding where the OS only
  // knows that.
  if (hwloc_get_cpubind(t, bound.set, HWLOC_CPUBIND_PROCESS) != 0 &&
      hwloc_get_cpubind(t, bound.set, HWLOC_CPUBIND_THREAD) != 0)
    throw Unavailable(util::located("hwloc could not read this process's CPU binding"));
  Binding b;
  const hwloc_obj_type_t core_type = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_CORE) > 0 ? HWLOC_OBJ_CORE : HWLOC_OBJ_PU;
  for (hwloc_obj_t core = nullptr; (core = hwloc_get_next_obj_by_type(t, core_type, core));)
    if (hwloc_bitmap_intersects(core->cpuset, bound.set)) b.cores.push_back(static_cast<int>(core->logical_index));
  for (hwloc_obj_t numa = nullptr; (numa = hwloc_get_next_obj_by_type(t, HWLOC_OBJ_NUMANODE, numa));)
    if (numa->cpuset && hwloc_bitmap_intersects(numa->cpuset, bound.set))
      b.numa.push_back(static_cast<int>(numa->logical_index));
  return b;
}

}  // namespace strata::topo
