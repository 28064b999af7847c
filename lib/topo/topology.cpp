// discover_topology: node_split says which ranks share a node; each node's
// leader reads the hardware with hwloc once and hands the other local ranks
// its XML, so that the node is scanned once and every local rank uses the
// same logical core numbers; every rank reads its own binding; one
// all-gather of small per-rank records gives every rank the whole Topology.
#include <mpi.h>

#include <fmt/format.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/check.hpp"
#include "util/where.hpp"
#include "strata/errors.hpp"
#include "strata/topology.hpp"
#include "topo/advice.hpp"
#include "topo/discover.hpp"
#include "topo/gpu_map.hpp"
#include "topo/gpu_plane.hpp"
#include "topo/hwloc_node.hpp"
#include "topo/node_split.hpp"

namespace strata {
namespace {

// What one rank contributes: its host and binding, what its process sees of
// CUDA (for the GPU assignment), plus the node's hardware when it is the
// node's leader.
struct Record {
  std::string hostname;
  std::string host_id;  // topo::host_identity(): tells hosts apart as NCCL does
  std::string machine;  // util::boot_id(): the same for hosts emulated on one machine
  topo::Binding binding;
  std::vector<std::string> cuda_bus_ids;  // by CUDA device index
  std::vector<int> cuda_modes;            // compute mode of each
  std::string cuda_problem;               // why CUDA is unusable in this process ("" when it is usable)
  std::string gpu_map;                    // STRATA_GPU_MAP as this process sees it
  bool has_hardware = false;
  topo::NodeHardware hardware;
};

// Records travel as bytes: 32-bit integers in native order (all ranks of an
// MPI job share it) and length-prefixed strings.
class Writer {
 public:
  void put(std::int32_t value) { bytes_.append(reinterpret_cast<const char*>(&value), sizeof value); }
  void put(const std::string& text) {
    put(static_cast<std::int32_t>(text.size()));
    bytes_ += text;
  }
  void put(const std::vector<int>& values) {
    put(static_cast<std::int32_t>(values.size()));
    for (int v : values) put(static_cast<std::int32_t>(v));
  }
  void put(const std::vector<std::string>& texts) {
    put(static_cast<std::int32_t>(texts.size()));
    for (const std::string& t : texts) put(t);
  }
  std::string take() { return std::move(bytes_); }

 private:
  std::string bytes_;
};

class Reader {
 public:
  explicit Reader(std::string_view bytes) : bytes_(bytes) {}
  int get_int() {
    std::int32_t value = 0;
    need(sizeof value);
    std::memcpy(&value, bytes_.data() + pos_, sizeof value);
    pos_ += sizeof value;
    return value;
  }
  std::string get_string() {
    const auto size = static_cast<std::size_t>(get_int());
    need(size);
    std::string text(bytes_.substr(pos_, size));
    pos_ += size;
    return text;
  }
  std::vector<int> get_ints() {
    std::vector<int> values(static_cast<std::size_t>(get_int()));
    for (int& v : values) v = get_int();
    return values;
  }
  std::vector<std::string> get_strings() {
    std::vector<std::string> texts(static_cast<std::size_t>(get_int()));
    for (std::string& t : texts) t = get_string();
    return texts;
  }

 private:
  void need(std::size_t n) const {
    if (pos_ + n > bytes_.size()) throw Error(util::located("topology: a rank's record is truncated (internal error)"));
  }
  std::string_view bytes_;
  std::size_t pos_ = 0;
};

std::string encode(const Record& r) {
  Writer w;
  w.put(r.hostname);
  w.put(r.host_id);
  w.put(r.machine);
  w.put(r.binding.cores);
  w.put(r.binding.numa);
  w.put(r.cuda_bus_ids);
  w.put(r.cuda_modes);
  w.put(r.cuda_problem);
  w.put(r.gpu_map);
  w.put(static_cast<std::int32_t>(r.has_hardware));
  if (r.has_hardware) {
    w.put(r.hardware.packages);
    w.put(r.hardware.numa_domains);
    w.put(r.hardware.cores);
    w.put(static_cast<std::int32_t>(r.hardware.gpus.size()));
    for (const GpuInfo& g : r.hardware.gpus) {
      w.put(g.pci_bus_id);
      w.put(g.numa);
    }
  }
  return w.take();
}

Record decode(std::string_view bytes) {
  Reader in(bytes);
  Record r;
  r.hostname = in.get_string();
  r.host_id = in.get_string();
  r.machine = in.get_string();
  r.binding.cores = in.get_ints();
  r.binding.numa = in.get_ints();
  r.cuda_bus_ids = in.get_strings();
  r.cuda_modes = in.get_ints();
  r.cuda_problem = in.get_string();
  r.gpu_map = in.get_string();
  r.has_hardware = in.get_int() != 0;
  if (r.has_hardware) {
    r.hardware.packages = in.get_int();
    r.hardware.numa_domains = in.get_int();
    r.hardware.cores = in.get_int();
    r.hardware.gpus.resize(static_cast<std::size_t>(in.get_int()));
    for (GpuInfo& g : r.hardware.gpus) {
      g.pci_bus_id = in.get_string();
      g.numa = in.get_int();
    }
  }
  return r;
}

// Every rank's bytes, indexed by rank. Collective over `comm`.
std::vector<std::string> allgather_bytes(const std::string& mine, MPI_Comm comm, int size) {
  int length = static_cast<int>(mine.size());
  std::vector<int> lengths(size), offsets(size);
  STRATA_CHECK_MPI(MPI_Allgather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, comm));
  long long total = 0;
  for (int r = 0; r < size; ++r) {
    offsets[r] = static_cast<int>(total);
    total += lengths[r];
  }
  if (total > INT32_MAX) throw Error(util::located("topology: the per-rank records exceed 2 GiB (internal error)"));
  std::string all(static_cast<std::size_t>(total), '\0');
  STRATA_CHECK_MPI(MPI_Allgatherv(mine.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(),
                                  MPI_CHAR, comm));
  std::vector<std::string> out(size);
  for (int r = 0; r < size; ++r) out[r] = all.substr(offsets[r], lengths[r]);
  return out;
}

// hwloc reads a machine in tens of milliseconds (it walks sysfs, PCI
// included), and a process may build many communicators (the interposer
// makes one per MPI communicator): the node is read once per process and
// kept, as is the topology parsed from the last XML a leader sent. The
// process's binding is still asked anew for every communicator.
std::mutex hwloc_cache_mutex;

const topo::HwlocNode& this_node() {
  static const topo::HwlocNode node = topo::HwlocNode::discover();  // retried on the next call if it throws
  return node;
}

const topo::HwlocNode& node_from_xml(const std::string& xml) {
  static std::string last_xml;
  static std::optional<topo::HwlocNode> last;
  std::lock_guard lock(hwloc_cache_mutex);
  if (!last || xml != last_xml) {
    try {
      last.emplace(topo::HwlocNode::from_xml(xml));
    } catch (const Unavailable&) {
      return this_node();  // hwloc without XML support: read the node ourselves
    }
    last_xml = xml;
  }
  return *last;
}

// This rank's record. The leader reads the node and broadcasts its XML over
// the node communicator; a failure is reported (length -1) instead of
// leaving the other local ranks waiting. Collective over `node`; returns the
// error text ("" on success) rather than throwing, so that every rank
// reaches the agreement step.
std::string local_record(MPI_Comm node, bool leader, Record& record) {
  std::string error, xml;
  const topo::HwlocNode* hw = nullptr;
  if (leader) {
    try {
      hw = &this_node();
      static const std::string this_node_xml = hw->to_xml();
      xml = this_node_xml;
    } catch (const Error& e) {
      error = e.what();
      xml.clear();
    }
  }
  int length = leader ? (error.empty() ? static_cast<int>(xml.size()) : -1) : 0;
  STRATA_CHECK_MPI(MPI_Bcast(&length, 1, MPI_INT, 0, node));
  if (length < 0) return error.empty() ? "the node leader could not read the node with hwloc" : error;
  xml.resize(static_cast<std::size_t>(length));
  STRATA_CHECK_MPI(MPI_Bcast(xml.data(), length, MPI_CHAR, 0, node));
  try {
    if (!leader) hw = &node_from_xml(xml);
    record.binding = hw->binding();
    if (leader) {
      record.has_hardware = true;
      record.hardware = hw->hardware();
    }
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

namespace topo {

Topology discover(MPI_Comm comm, const NodeSplit& split, const CudaProbe& cuda, std::vector<GpuRow>* gpu_rows) {
  int rank = 0, size = 1;
  STRATA_CHECK_MPI(MPI_Comm_rank(comm, &rank));
  STRATA_CHECK_MPI(MPI_Comm_size(comm, &size));

  Record mine;
  mine.hostname = util::hostname();
  mine.host_id = topo::host_identity();
  mine.machine = util::boot_id();
  mine.cuda_bus_ids = cuda.bus_ids;
  mine.cuda_modes = cuda.modes;
  mine.cuda_problem = cuda.problem;
  if (const char* map = std::getenv("STRATA_GPU_MAP")) mine.gpu_map = map;
  const std::string error = local_record(split.node, split.local_rank == 0, mine);
  // Agree before the all-gather: a rank that failed must not leave the
  // others waiting in it.
  int ok = error.empty() ? 1 : 0;
  STRATA_CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, comm));
  if (!ok)
    throw Unavailable(util::located(error.empty()
                                        ? "topology discovery failed on another rank (see its error)"
                                        : fmt::format("topology discovery failed: {}", util::unlocated(error))));

  const std::vector<std::string> all = allgather_bytes(encode(mine), comm, size);
  Topology topology;
  topology.virtual_nodes = split.virtual_nodes;
  topology.nodes.resize(static_cast<std::size_t>(split.node_count));
  topology.ranks.resize(static_cast<std::size_t>(size));
  for (int n = 0; n < split.node_count; ++n) topology.nodes[n].ranks = split.ranks_on(n);
  std::vector<Record> records;
  for (int r = 0; r < size; ++r) {
    records.push_back(decode(all[r]));
    Record& record = records.back();
    RankInfo& info = topology.ranks[r];
    info.rank = r;
    info.node = split.node_of_rank[r];
    NodeInfo& node = topology.nodes[info.node];
    // ranks_on is ascending and the node communicator orders by parent rank.
    for (std::size_t i = 0; i < node.ranks.size(); ++i)
      if (node.ranks[i] == r) info.local_rank = static_cast<int>(i);
    info.hostname = record.hostname;
    info.bound_cores = std::move(record.binding.cores);
    info.numa = std::move(record.binding.numa);
    if (record.has_hardware) {
      node.hostname = record.hostname;
      node.machine = record.machine;
      node.packages = record.hardware.packages;
      node.numa_domains = record.hardware.numa_domains;
      node.cores = record.hardware.cores;
      node.gpus = std::move(record.hardware.gpus);
    }
  }
  // GPU assignments need every local rank's binding, the devices every
  // local rank sees, and the node's GPUs.
  for (int r = 0; r < size; ++r) {
    RankInfo& info = topology.ranks[r];
    const NodeInfo& node = topology.nodes[info.node];
    std::vector<std::vector<int>> rank_numa;
    std::vector<std::vector<std::string>> rank_cuda;
    for (const int peer : node.ranks) {
      rank_numa.push_back(topology.ranks[peer].numa);
      rank_cuda.push_back(records[peer].cuda_bus_ids);
    }
    info.gpu = topo::assign_gpu({node.gpus, rank_numa, rank_cuda}, info.local_rank, records[r].cuda_bus_ids,
                                records[r].gpu_map);
  }
  // The GPU control plane's table: one row per rank (topo/gpu_plane.hpp).
  if (gpu_rows) {
    gpu_rows->clear();
    for (int r = 0; r < size; ++r) {
      const RankInfo& info = topology.ranks[r];
      Record& record = records[r];
      GpuRow row;
      row.hostname = record.hostname;
      row.host = record.host_id;
      row.node = info.node;
      row.local_rank = info.local_rank;
      // A process whose CUDA is unusable has no device, whatever the map says.
      row.device = record.cuda_problem.empty() ? info.gpu.cuda_device : -1;
      row.problem = !record.cuda_problem.empty() ? record.cuda_problem : row.device < 0 ? info.gpu.how : "";
      for (const std::string& id : record.cuda_bus_ids) row.bus_ids.push_back(normalized_bus_id(id));
      row.modes = std::move(record.cuda_modes);
      gpu_rows->push_back(std::move(row));
    }
  }
  topo::warn_about_binding_once(topology);  // (MPI_COMM_WORLD rank 0's process only)
  topo::warn_about_shared_gpus_once(topology);
  return topology;
}

}  // namespace topo


}  // namespace strata
