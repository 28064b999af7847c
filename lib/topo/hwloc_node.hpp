// What hwloc says about this node and this process: the hardware counts and
// NVIDIA GPUs (read once per node, by its leader) and the cores and NUMA
// domains the calling process is bound to. Internal; the only file that
// includes hwloc.h.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "strata/topology.hpp"

namespace strata::topo {

// The hardware part of a NodeInfo.
struct NodeHardware {
  int packages = 0;
  int numa_domains = 0;
  int cores = 0;
  std::vector<GpuInfo> gpus;
};

// Where the calling process may run, in the topology's logical indexes.
struct Binding {
  std::vector<int> cores;  // cores sharing at least one PU with the binding
  std::vector<int> numa;   // NUMA domains of those cores
};

// A loaded hwloc topology of this machine (RAII; move-only).
class HwlocNode {
 public:
  // Read this machine from the OS, with PCI devices (for the GPUs).
  // Throws Unavailable if hwloc fails.
  static HwlocNode discover();
  // Load a topology another process of this machine exported with to_xml(),
  // so that a node is read from the OS once and every rank agrees on the
  // logical indexes. Binding queries still ask the OS about this process.
  static HwlocNode from_xml(const std::string& xml);
  // Load an exported topology of some machine, not necessarily this one
  // (tests): hardware() works, binding() does not.
  static HwlocNode from_foreign_xml(const std::string& xml);

  HwlocNode(HwlocNode&&) noexcept;
  HwlocNode& operator=(HwlocNode&&) noexcept;
  ~HwlocNode();

  std::string to_xml() const;
  NodeHardware hardware() const;
  // This process's CPU binding. Throws Unavailable if the OS cannot say.
  Binding binding() const;

 private:
  struct State;
  static HwlocNode adopt(void* topology);  // takes ownership of an hwloc_topology_t
  explicit HwlocNode(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace strata::topo
