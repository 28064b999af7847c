// Single-process checks of the hwloc layer and the binding and GPU sharing
// advice: a made-up two-socket machine with GPUs (XML fixture), this
// machine read live and through its own XML, and advice for hand-built
// topologies.
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "topo/advice.hpp"
#include "topo/hwloc_node.hpp"
#include "util/ranges.hpp"

namespace {

std::string read_file(const char* path) {
  std::ifstream in(path);
  REQUIRE_MESSAGE(in.good(), "cannot read ", path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Two nodes of 2 cores / 2 NUMA domains; rank r bound as given.
strata::Topology two_nodes(std::vector<std::vector<int>> cores, std::vector<std::vector<int>> numa) {
  strata::Topology t;
  t.nodes = {{"a", {0, 1}, 2, 2, 2, {}}, {"b", {2}, 2, 2, 2, {}}};
  for (int r = 0; r < 3; ++r)
    t.ranks.push_back({r, r < 2 ? 0 : 1, r < 2 ? r : 0, r < 2 ? "a" : "b", cores[r], numa[r], {}});
  return t;
}

}  // namespace

TEST_CASE("hardware of a two-socket machine with NVIDIA GPUs") {
  const auto node = strata::topo::HwlocNode::from_foreign_xml(read_file(STRATA_TOPO_FIXTURE));
  const strata::topo::NodeHardware hw = node.hardware();
  CHECK(hw.packages == 2);
  CHECK(hw.numa_domains == 2);
  CHECK(hw.cores == 4);
  // Only display-class NVIDIA functions: not the audio, NVSwitch or other vendor's VGA.
  REQUIRE(hw.gpus.size() == 2);
  CHECK(hw.gpus[0].pci_bus_id == "0000:3b:00.0");
  CHECK(hw.gpus[0].numa == 1);
  CHECK(hw.gpus[1].pci_bus_id == "0001:c1:00.0");
  CHECK(hw.gpus[1].numa == -1);  // attached to the whole machine: no single NUMA domain
}

TEST_CASE("this machine, read directly and through the leader's XML, agrees") {
  const auto live = strata::topo::HwlocNode::discover();
  const auto copy = strata::topo::HwlocNode::from_xml(live.to_xml());
  const auto a = live.hardware(), b = copy.hardware();
  CHECK(a.cores >= 1);
  CHECK(a.numa_domains >= 1);
  CHECK(a.cores == b.cores);
  CHECK(a.numa_domains == b.numa_domains);
  CHECK(a.packages == b.packages);
  CHECK(a.gpus.size() == b.gpus.size());
  const auto bound_live = live.binding(), bound_copy = copy.binding();
  CHECK(!bound_live.cores.empty());
  CHECK(!bound_live.numa.empty());
  CHECK(bound_live.cores == bound_copy.cores);
  CHECK(bound_live.numa == bound_copy.numa);
}

TEST_CASE("util::ranges") {
  CHECK(strata::util::ranges(std::vector<int>{}) == "none");
  CHECK(strata::util::ranges(std::vector<int>{3}) == "3");
  CHECK(strata::util::ranges(std::vector<int>{0, 1, 2, 3, 6, 8, 9}) == "0-3,6,8-9");
}

TEST_CASE("binding fix: the launcher's words for each MPI library") {
  using strata::topo::binding_fix;
  const auto says = [](const std::string& fix, const char* words) { return fix.find(words) != std::string::npos; };
  CHECK(says(binding_fix("Open MPI v5.0.11, package: Open MPI"), "mpirun --bind-to core --map-by numa"));
  CHECK(says(binding_fix("MPICH Version:      5.0.2\nMPICH Release date"), "mpiexec -bind-to core"));
  CHECK(says(binding_fix("MVAPICH Version:    3.0"), "mpiexec -bind-to core"));
  // Intel MPI's version string names MPICH too; its hydra pins by variables.
  const std::string intel = binding_fix("Intel(R) MPI Library 2021.18 for Linux* OS (based on MPICH)");
  CHECK(says(intel, "I_MPI_PIN_DOMAIN core"));
  CHECK_FALSE(says(intel, "-bind-to"));
  CHECK(says(binding_fix("MPI VERSION    : CRAY MPICH version 8.1.28"), "--cpu-bind core"));
  CHECK(says(binding_fix("a library nobody knows"), "binding option"));
  for (const char* library : {"Open MPI", "MPICH", "Intel(R) MPI", "CRAY MPICH", ""})
    CHECK(says(binding_fix(library), "srun --cpu-bind=cores"));
}

TEST_CASE("binding advice") {
  SUBCASE("one core each: nothing to say") {
    const auto t = two_nodes({{0}, {1}, {0}}, {{0}, {1}, {0}});
    CHECK(strata::topo::binding_advice(t).empty());
  }
  SUBCASE("unbound ranks are named, with the fix") {
    const auto t = two_nodes({{0, 1}, {0, 1}, {1}}, {{0, 1}, {0, 1}, {1}});
    CHECK(strata::topo::unbound(t, t.ranks[0]));
    CHECK_FALSE(strata::topo::unbound(t, t.ranks[2]));
    const auto advice = strata::topo::binding_advice(t);
    REQUIRE(advice.size() == 1);  // unbound ranks are not also reported as spanning NUMA
    CHECK(advice[0].find("2 of 3 ranks are not bound") != std::string::npos);
    CHECK(advice[0].find("ranks 0-1") != std::string::npos);
    // (The launcher's words depend on the MPI this runs: "binding fix".)
    CHECK(advice[0].find("srun --cpu-bind=cores") != std::string::npos);
  }
  SUBCASE("a rank spanning NUMA domains on a bigger node") {
    auto t = two_nodes({{0}, {1, 2}, {0}}, {{0}, {0, 1}, {0}});
    t.nodes[0].cores = 4;
    CHECK(strata::topo::spans_numa(t, t.ranks[1]));
    const auto advice = strata::topo::binding_advice(t);
    REQUIRE(advice.size() == 1);
    CHECK(advice[0].find("more than one NUMA domain (ranks 1)") != std::string::npos);
  }
  SUBCASE("a rank alone on its host is not advised: it competes with nobody") {
    const auto t = two_nodes({{0}, {1}, {0, 1}}, {{0}, {1}, {0, 1}});  // rank 2, alone on node b, is unbound
    CHECK(strata::topo::unbound(t, t.ranks[2]));
    CHECK(strata::topo::binding_advice(t).empty());
  }
  SUBCASE("a one-rank communicator gets no advice") {
    strata::Topology t;
    t.nodes = {{"a", {0}, 1, 1, 2, {}}};
    t.ranks.push_back({0, 0, 0, "a", {0, 1}, {0}, {}});
    CHECK(strata::topo::unbound(t, t.ranks[0]));
    CHECK(strata::topo::binding_advice(t).empty());
  }
  SUBCASE("a one-core node is never 'unbound'") {
    auto t = two_nodes({{0}, {0}, {0}}, {{0}, {0}, {0}});
    t.nodes[0].cores = t.nodes[1].cores = 1;
    CHECK(strata::topo::binding_advice(t).empty());
  }
}

TEST_CASE("GPU sharing advice") {
  auto t = two_nodes({{0}, {1}, {0}}, {{0}, {1}, {0}});
  SUBCASE("one GPU per rank, or none: nothing to say") {
    t.ranks[0].gpu = {0, "0000:07:00.0", "nearest: NUMA 0"};
    t.ranks[1].gpu = {1, "0000:0f:00.0", "nearest: NUMA 1"};
    t.ranks[2].gpu = {0, "0000:07:00.0", "nearest: NUMA 0"};  // another node's GPU with the same bus id
    CHECK(strata::topo::gpu_sharing_advice(t).empty());
  }
  SUBCASE("two ranks of a node on one GPU are named with how it came about") {
    t.ranks[0].gpu = {0, "0000:07:00.0", "nearest: NUMA 0; shares it with local rank 1: 2 local ranks on 1 GPU"};
    t.ranks[1].gpu = {0, "0000:07:00.0", "nearest: NUMA 0; shares it with local rank 0: 2 local ranks on 1 GPU"};
    const std::string advice = strata::topo::gpu_sharing_advice(t);
    CHECK(advice.find("ranks share a GPU on 1 of 2 nodes") == 0);
    CHECK(advice.find("on node 0 (a), ranks 0-1 drive GPU 0000:07:00.0 (rank 0: nearest: NUMA 0; shares it with "
                      "local rank 1: 2 local ranks on 1 GPU)") != std::string::npos);
    CHECK(advice.find("NCCL refuses two ranks on one GPU") != std::string::npos);
  }
}
