// strata-topo: discovers the topology over MPI_COMM_WORLD (every rank takes
// part), then rank 0 prints it and the all-reduce plan the selector runs for
// each requested size: text for people, --json for scripts.
#include <mpi.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <span>
#include <string>

#include "options.hpp"
#include "strata/strata.hpp"
#include "strata/topology.hpp"

namespace topo_app {
namespace {

constexpr int kExitUsage = 2, kExitError = 3;

// One row of the plan: what the spec says for this size and what runs.
struct PlanRow {
  std::size_t bytes = 0;
  std::string entry;      // the spec entry's algorithm ("auto" when the default table decides)
  std::string algorithm;  // what runs, "#shards" when > 1
  std::string cuda;       // what runs on CUDA tensors of that size
};

// One tensor of `bytes` bytes, as plan_for sees it (only size and memory matter).
strata::Plan plan_of(const strata::Communicator& comm, std::size_t bytes) {
  const strata::Tensor tensor{nullptr, bytes, strata::DataType::u8};
  return comm.plan_for(std::span(&tensor, 1));
}

std::vector<PlanRow> plan_rows(const Options& o, const strata::Communicator& comm) {
  const strata::AllReduceSpec spec = comm.all_reduce_spec();
  std::vector<PlanRow> rows;
  for (const std::size_t bytes : o.sizes) {
    const strata::Plan plan = plan_of(comm, bytes);
    PlanRow row{bytes, "auto", plan.packs.empty() ? "none (0 bytes)" : plan.packs.front().algorithm,
                comm.algorithm_for(bytes, strata::Collective::all_reduce, strata::Memory::cuda)};
    if (const strata::SpecTuple* e = spec.select(bytes))
      row.entry = e->shards > 1 ? fmt::format("{}#{}", e->algorithm, e->shards) : e->algorithm;
    rows.push_back(row);
  }
  return rows;
}

// "(a inside each node, b across the N nodes)" for a hierarchical name.
std::string levels_note(const std::string& algorithm, const strata::Topology& t) {
  const auto slash = algorithm.find('/');
  if (slash == std::string::npos) return "";
  return t.nodes.size() < 2 ? fmt::format("  (one node: runs {} flat)", algorithm.substr(0, slash))
                            : fmt::format("  ({} inside each node, {} across the {} nodes)",
                                          algorithm.substr(0, slash), algorithm.substr(slash + 1), t.nodes.size());
}

// Why CUDA tensors cannot run here, from the first rank without a GPU; "" when every rank has one.
std::string cuda_note(const strata::Topology& t) {
  for (const strata::RankInfo& r : t.ranks)
    if (r.gpu.cuda_device < 0)
      return fmt::format("CUDA tensors are unavailable here (rank {}: {}); the plan a cluster of this shape with one "
                         "GPU per rank would run:\n",
                         r.rank, r.gpu.how);
  return "";
}

// How hierarchical plans would split the ranks; empty on one node.
std::string hierarchy_note(const strata::Topology& t) {
  if (t.nodes.size() < 2) return "";
  std::size_t fewest = t.ranks.size(), most = 0;
  for (const strata::NodeInfo& n : t.nodes) {
    fewest = std::min(fewest, n.ranks.size());
    most = std::max(most, n.ranks.size());
  }
  std::string note = fmt::format("hierarchical plans (\"intra/cross\" specs): cross-node level over {} nodes with {} "
                                 "slice owner{} per node",
                                 t.nodes.size(), fewest, fewest == 1 ? "" : "s");
  if (fewest != most)
    note += fmt::format("; nodes are unequal, so local ranks {} and up take part inside their node only", fewest);
  return note;
}

void print_text(const strata::Topology& t, const std::vector<PlanRow>& rows, const strata::Communicator& comm) {
  const strata::AllReduceSpec spec = comm.all_reduce_spec();
  std::string out = fmt::format("strata-topo {}\n{}", strata::version, strata::to_text(t));
  if (const std::string note = hierarchy_note(t); !note.empty()) out += note + "\n";
  out += fmt::format("\nall_reduce plan on {} ranks, {}\n", t.ranks.size(), comm.spec_map());
  const bool show_entry = !spec.is_auto();
  out += show_entry ? fmt::format("{:>10} {:>12}  {:<16} {}\n", "size", "bytes", "spec entry", "runs")
                    : fmt::format("{:>10} {:>12}  {}\n", "size", "bytes", "runs");
  for (const PlanRow& r : rows) {
    out += show_entry ? fmt::format("{:>10} {:>12}  {:<16} {}", format_size(r.bytes), r.bytes, r.entry, r.algorithm)
                      : fmt::format("{:>10} {:>12}  {}", format_size(r.bytes), r.bytes, r.algorithm);
    out += levels_note(r.algorithm, t) + "\n";
  }
  // CUDA tensors: the same spec, planned with the GPU control plane's
  // verdicts (NCCL only over groups where no two ranks share a GPU).
  out += fmt::format("\nall_reduce plan on CUDA tensors (docs/GPU.md):\n{}", cuda_note(t));
  out += fmt::format("{:>10} {:>12}  {}\n", "size", "bytes", "runs");
  for (const PlanRow& r : rows)
    out += fmt::format("{:>10} {:>12}  {}{}\n", format_size(r.bytes), r.bytes, r.cuda, levels_note(r.cuda, t));
  std::fputs(out.c_str(), stdout);
}

void print_json(const strata::Topology& t, const std::vector<PlanRow>& rows, const strata::Communicator& comm) {
  const strata::AllReduceSpec spec = comm.all_reduce_spec();
  nlohmann::ordered_json doc;
  doc["strata_version"] = strata::version;
  doc["ranks"] = t.ranks.size();
  doc["topology"] = nlohmann::ordered_json::parse(strata::to_json(t));
  doc["spec"] = spec.is_auto() ? "auto" : spec.to_string();
  doc["spec_map"] = comm.spec_map();
  doc["all_reduce"] = nlohmann::ordered_json::array();
  doc["cuda_all_reduce"] = nlohmann::ordered_json::array();
  for (const PlanRow& r : rows) {
    doc["all_reduce"].push_back({{"bytes", r.bytes}, {"size", format_size(r.bytes)}, {"spec_entry", r.entry},
                                 {"algorithm", r.algorithm}});
    doc["cuda_all_reduce"].push_back({{"bytes", r.bytes}, {"size", format_size(r.bytes)}, {"algorithm", r.cuda}});
  }
  std::fputs((doc.dump(2) + "\n").c_str(), stdout);
}

int run(const Options& o, int rank) {
  // Both are collective; the Communicator validates the spec on every rank.
  strata::Communicator comm(MPI_COMM_WORLD, strata::Config{o.spec, 0});
  const strata::Topology topology = strata::discover_topology(MPI_COMM_WORLD);
  if (rank != 0) return 0;
  const std::vector<PlanRow> rows = plan_rows(o, comm);
  if (o.json) print_json(topology, rows, comm);
  else print_text(topology, rows, comm);
  std::fflush(stdout);
  return 0;
}

}  // namespace
}  // namespace topo_app

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int status = 0;
  try {
    std::string help;
    const auto options = topo_app::parse_options(argc, argv, &help);
    if (!options) {
      if (rank == 0) fmt::print("{}", help);
    } else {
      status = topo_app::run(*options, rank);
    }
  } catch (const topo_app::UsageError& e) {
    // Every rank parsed the same arguments and failed the same way; one prints.
    if (rank == 0) fmt::print(stderr, "strata-topo: {} (see --help)\n", e.what());
    status = topo_app::kExitUsage;
  } catch (const strata::InvalidArgument& e) {
    // A bad spec or STRATA_RANKS_PER_NODE, raised on every rank.
    if (rank == 0) fmt::print(stderr, "strata-topo: {}\n", e.what());
    status = topo_app::kExitUsage;
  } catch (const std::exception& e) {
    // Possibly on one rank only: take the job down rather than hang.
    fmt::print(stderr, "strata-topo: rank {}: {}\n", rank, e.what());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, topo_app::kExitError);
  }
  MPI_Finalize();
  return status;
}
