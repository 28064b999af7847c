// discover_topology under mpirun: node count, membership and local ranks
// against what STRATA_RANKS_PER_NODE (or the host names) imply, per-rank
// sanity of the hwloc data, the same value on every rank, and to_json
// parsed back (nlohmann) field by field. The MPI harness's per-rank checks
// (tests/mpi/harness_checks.hpp): a failure prints its rank, any rank's
// failure fails the run, and the harness's watchdog bounds it.
//   test_topology [--expect-bound]   (--expect-bound: launched with
//   strata-launch --bind core, so every rank must be bound to exactly one core)
#include <mpi.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "harness_core.hpp"
#include "strata/strata.hpp"

namespace {

int g_rank = 0;
strata::test::RankChecks* g_checks = nullptr;  // the harness's per-rank checks (main's)

#define CHECK(cond, ...)                                                                                    \
  g_checks->check((cond), fmt::format("{}:{}: CHECK({}) failed: {}", __FILE__, __LINE__, #cond,            \
                                      fmt::format(__VA_ARGS__)))

int ranks_per_node_from_env() {
  const char* env = std::getenv("STRATA_RANKS_PER_NODE");
  return env && *env ? std::atoi(env) : 0;
}

// Every rank's processor name, to predict the real nodes independently.
std::vector<std::string> all_hosts(int size) {
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int length = 0;
  MPI_Get_processor_name(name, &length);
  std::vector<char> all(static_cast<std::size_t>(MPI_MAX_PROCESSOR_NAME) * size);
  MPI_Allgather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all.data(), MPI_MAX_PROCESSOR_NAME, MPI_CHAR, MPI_COMM_WORLD);
  std::vector<std::string> hosts;
  for (int r = 0; r < size; ++r) hosts.emplace_back(&all[static_cast<std::size_t>(r) * MPI_MAX_PROCESSOR_NAME]);
  return hosts;
}

// Expected node of each rank: k consecutive ranks per virtual node, else one
// node per host in order of first appearance.
std::vector<int> expected_nodes(int size, int per_node, const std::vector<std::string>& hosts) {
  std::vector<int> node(size);
  std::vector<std::string> seen;
  for (int r = 0; r < size; ++r) {
    if (per_node > 0) {
      node[r] = r / per_node;
    } else {
      auto it = std::find(seen.begin(), seen.end(), hosts[r]);
      node[r] = static_cast<int>(it - seen.begin());
      if (it == seen.end()) seen.push_back(hosts[r]);
    }
  }
  return node;
}

void check_structure(const strata::Topology& t, int size, int per_node, const std::vector<int>& expected) {
  CHECK(static_cast<int>(t.ranks.size()) == size, "{} ranks, expected {}", t.ranks.size(), size);
  CHECK(t.virtual_nodes == (per_node > 0), "virtual_nodes = {}", t.virtual_nodes);
  const int node_count = *std::max_element(expected.begin(), expected.end()) + 1;
  if (per_node > 0)
    CHECK(node_count == (size + per_node - 1) / per_node, "test bug: {} nodes", node_count);
  CHECK(static_cast<int>(t.nodes.size()) == node_count, "{} nodes, expected {}", t.nodes.size(), node_count);
  if (static_cast<int>(t.nodes.size()) != node_count || static_cast<int>(t.ranks.size()) != size) return;

  std::size_t total = 0;
  for (int n = 0; n < node_count; ++n) {
    const strata::NodeInfo& node = t.nodes[n];
    std::vector<int> members;
    for (int r = 0; r < size; ++r)
      if (expected[r] == n) members.push_back(r);
    CHECK(node.ranks == members, "node {} holds ranks [{}], expected [{}]", n, fmt::join(node.ranks, ","),
          fmt::join(members, ","));
    total += node.ranks.size();
    CHECK(!node.hostname.empty(), "node {} has no host name", n);
    // Every node of this one-machine test runs under one kernel: one boot id.
    CHECK(!node.machine.empty() && node.machine == t.nodes[0].machine, "node {}: machine '{}', node 0's '{}'", n,
          node.machine, t.nodes[0].machine);
    CHECK(node.cores >= 1 && node.packages >= 1 && node.numa_domains >= 1,
          "node {}: {} packages, {} NUMA domains, {} cores", n, node.packages, node.numa_domains, node.cores);
    for (const strata::GpuInfo& g : node.gpus)
      CHECK(g.pci_bus_id.size() == 12 && g.numa < node.numa_domains, "node {}: GPU '{}' NUMA {}", n, g.pci_bus_id,
            g.numa);
  }
  CHECK(static_cast<int>(total) == size, "node sizes sum to {}, expected {}", total, size);

  for (int r = 0; r < size; ++r) {
    const strata::RankInfo& info = t.ranks[r];
    CHECK(info.rank == r, "ranks[{}].rank = {}", r, info.rank);
    CHECK(info.node == expected[r], "rank {} on node {}, expected {}", r, info.node, expected[r]);
    const std::vector<int>& members = t.nodes[expected[r]].ranks;
    const int local = static_cast<int>(std::find(members.begin(), members.end(), r) - members.begin());
    CHECK(info.local_rank == local, "rank {} has local rank {}, expected {}", r, info.local_rank, local);
    CHECK(info.hostname == t.nodes[expected[r]].hostname, "rank {} on host '{}', its node on '{}'", r, info.hostname,
          t.nodes[expected[r]].hostname);
    const strata::NodeInfo& node = t.nodes[expected[r]];
    CHECK(!info.bound_cores.empty() && std::is_sorted(info.bound_cores.begin(), info.bound_cores.end()) &&
              info.bound_cores.back() < node.cores && info.bound_cores.front() >= 0,
          "rank {} bound to cores [{}] of {}", r, fmt::join(info.bound_cores, ","), node.cores);
    CHECK(!info.numa.empty() && info.numa.back() < node.numa_domains, "rank {} in NUMA [{}] of {}", r,
          fmt::join(info.numa, ","), node.numa_domains);
  }
}

// to_json, parsed independently, must say what the structs say.
void check_json(const strata::Topology& t) {
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(strata::to_json(t));
  } catch (const std::exception& e) {
    CHECK(false, "to_json does not parse: {}", e.what());
    return;
  }
  CHECK(doc.at("virtual_nodes").get<bool>() == t.virtual_nodes, "virtual_nodes");
  CHECK(doc.at("nodes").size() == t.nodes.size() && doc.at("ranks").size() == t.ranks.size(), "array sizes");
  for (std::size_t n = 0; n < std::min(doc.at("nodes").size(), t.nodes.size()); ++n) {
    const auto& j = doc["nodes"][n];
    CHECK(j.at("ranks").get<std::vector<int>>() == t.nodes[n].ranks && j.at("cores").get<int>() == t.nodes[n].cores &&
              j.at("hostname").get<std::string>() == t.nodes[n].hostname && j.at("gpus").size() == t.nodes[n].gpus.size(),
          "JSON node {} differs: {}", n, j.dump());
  }
  for (std::size_t r = 0; r < std::min(doc.at("ranks").size(), t.ranks.size()); ++r) {
    const auto& j = doc["ranks"][r];
    CHECK(j.at("rank").get<int>() == t.ranks[r].rank && j.at("node").get<int>() == t.ranks[r].node &&
              j.at("local_rank").get<int>() == t.ranks[r].local_rank &&
              j.at("bound_cores").get<std::vector<int>>() == t.ranks[r].bound_cores &&
              j.at("numa").get<std::vector<int>>() == t.ranks[r].numa,
          "JSON rank {} differs: {}", r, j.dump());
  }
}

// Rank 0's JSON must equal everybody's: every rank holds the same value.
void check_same_everywhere(const strata::Topology& t) {
  std::string mine = strata::to_json(t);
  int length = static_cast<int>(mine.size());
  MPI_Bcast(&length, 1, MPI_INT, 0, MPI_COMM_WORLD);
  std::string root(static_cast<std::size_t>(length), '\0');
  if (g_rank == 0) root = mine;
  MPI_Bcast(root.data(), length, MPI_CHAR, 0, MPI_COMM_WORLD);
  CHECK(root == mine, "topology differs from rank 0's:\n  mine:   {}\n  rank 0: {}", mine, root);
}

void check_text(const strata::Topology& t) {
  const std::string text = strata::to_text(t);
  for (std::size_t n = 0; n < t.nodes.size(); ++n)
    CHECK(text.find(fmt::format("node {}: ", n)) != std::string::npos, "to_text lacks node {}:\n{}", n, text);
  for (std::size_t r = 0; r < t.ranks.size(); ++r)
    CHECK(text.find(fmt::format("rank {} (local {})", r, t.ranks[r].local_rank)) != std::string::npos,
          "to_text lacks rank {}:\n{}", r, text);
}

// Launched with strata-launch --bind core: one core each, distinct within a node, and
// no advice about binding.
void check_bound(const strata::Topology& t) {
  for (const strata::NodeInfo& node : t.nodes) {
    std::set<int> used;
    for (int r : node.ranks) {
      const strata::RankInfo& info = t.ranks[r];
      CHECK(info.bound_cores.size() == 1 && info.numa.size() == 1, "rank {} bound to cores [{}], NUMA [{}]", r,
            fmt::join(info.bound_cores, ","), fmt::join(info.numa, ","));
      if (!info.bound_cores.empty())
        CHECK(used.insert(info.bound_cores.front()).second, "rank {} shares core {}", r, info.bound_cores.front());
    }
  }
  CHECK(strata::to_text(t).find("advice:") == std::string::npos, "advice for bound ranks:\n{}", strata::to_text(t));
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const bool expect_bound = argc > 1 && std::strcmp(argv[1], "--expect-bound") == 0;
  int status = 1;
  {
    strata::test::RankChecks checks("test_topology", 60);
    g_checks = &checks;
    const int per_node = ranks_per_node_from_env();
    const std::vector<int> expected = expected_nodes(size, per_node, all_hosts(size));
    try {
      const strata::Topology t = strata::discover_topology(MPI_COMM_WORLD);
      check_structure(t, size, per_node, expected);
      check_json(t);
      check_same_everywhere(t);
      check_text(t);
      if (expect_bound) check_bound(t);
      // A second discovery (as a second Communicator would do) agrees.
      CHECK(strata::to_json(strata::discover_topology(MPI_COMM_WORLD)) == strata::to_json(t), "rediscovery differs");
    } catch (const std::exception& e) {
      CHECK(false, "discover_topology threw: {}", e.what());
    }
    status = checks.finish();
  }
  MPI_Finalize();
  return status;
}
