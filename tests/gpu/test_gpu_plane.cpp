// The GPU control plane on synthetic clusters, without a GPU: which device
// each rank drives (topo::assign_gpu), which groups may run NCCL
// (topo::decide: whole communicator, nodes, cross-node groups; replicas:
// topo::decide_replicas), which plan runs per size (plan::choose with the
// plane's verdicts) and that the automatic plan is never refused. Every
// decision is a pure function of the table every rank holds identically,
// so every rank reaches it alike (no rank appears among the inputs).
#include <doctest/doctest.h>

#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "exec/registry.hpp"
#include "plan/choose.hpp"
#include "plan/nan.hpp"
#include "plan/replicas.hpp"
#include "strata/errors.hpp"
#include "topo/gpu_map.hpp"
#include "topo/gpu_plane.hpp"

using namespace strata;
using topo::GpuRow;

namespace {

// PCI bus ids of an 8-GPU server; identical servers have identical ids.
const std::vector<std::string> kBus = {"0000:07:00.0", "0000:0f:00.0", "0000:47:00.0", "0000:4e:00.0",
                                       "0000:87:00.0", "0000:90:00.0", "0000:b7:00.0", "0000:bd:00.0"};

struct NodeSpec {
  int ranks;
  int gpus;                // CUDA devices each process sees (the first `gpus` of kBus)
  std::string host = "";   // default: "node<index>"
  int mode = topo::kComputeDefault;
  bool one_numa = false;   // every local rank bound to NUMA 0 (else halves: NUMA 0, then NUMA 1)
};

// The table of a cluster: devices chosen as strata does (assign_gpu: GPUs
// 0-3 on NUMA 0 and 4-7 on NUMA 1, local ranks bound to NUMA domains in
// halves, or all to NUMA 0 with `one_numa`), `rpn` > 0 cuts the ranks into virtual nodes of that many
// consecutive ranks (the hosts stay the real ones).
std::vector<GpuRow> cluster(const std::vector<NodeSpec>& nodes, int rpn = 0) {
  std::vector<GpuRow> rows;
  for (std::size_t n = 0; n < nodes.size(); ++n) {
    const NodeSpec& spec = nodes[n];
    std::vector<GpuInfo> gpus;
    std::vector<std::string> cuda;
    for (int g = 0; g < spec.gpus; ++g) {
      gpus.push_back({kBus[std::size_t(g)], g < 4 ? 0 : 1});
      cuda.push_back(kBus[std::size_t(g)]);
    }
    std::vector<std::vector<int>> numa;
    for (int l = 0; l < spec.ranks; ++l)
      numa.push_back({!spec.one_numa && spec.gpus > 4 && l >= spec.ranks / 2 ? 1 : 0});
    const std::string host = spec.host.empty() ? "node" + std::to_string(n) : spec.host;
    for (int l = 0; l < spec.ranks; ++l) {
      const GpuAssignment a = topo::assign_gpu({gpus, numa}, l, cuda, "");
      GpuRow row;
      row.hostname = host;
      row.host = host + "/boot-" + host;
      row.node = int(n);
      row.local_rank = l;
      row.device = a.cuda_device;
      row.problem = a.cuda_device < 0 ? a.how : "";
      row.bus_ids = cuda;
      row.modes.assign(cuda.size(), spec.mode);
      rows.push_back(row);
    }
  }
  if (rpn > 0)
    for (std::size_t r = 0; r < rows.size(); ++r) rows[r].node = int(r) / rpn, rows[r].local_rank = int(r) % rpn;
  return rows;
}

int min_local(const std::vector<GpuRow>& rows) {
  std::vector<int> per_node;
  for (const GpuRow& r : rows) {
    if (std::size_t(r.node) >= per_node.size()) per_node.resize(std::size_t(r.node) + 1, 0);
    ++per_node[std::size_t(r.node)];
  }
  int fewest = per_node.empty() ? 1 : per_node[0];
  for (int c : per_node) fewest = std::min(fewest, c);
  return fewest;
}

int node_count(const std::vector<GpuRow>& rows) { return rows.empty() ? 1 : rows.back().node + 1; }

topo::GpuPlane plane_of(const std::vector<GpuRow>& rows) { return topo::decide(rows, min_local(rows)); }

// What auto runs for `bytes` on CUDA tensors of rank 0's node.
plan::Choice auto_plan(const std::vector<GpuRow>& rows, const topo::GpuPlane& plane, std::size_t bytes,
                       Collective collective = Collective::all_reduce) {
  int local_size = 0;
  for (const GpuRow& r : rows) local_size += r.node == 0;
  plan::Layout layout{.node_count = node_count(rows), .local_size = local_size};
  plane.apply_to(layout);
  return plan::choose(exec::catalogue(), plan::Spec{}, collective, bytes, Implementation::automatic, Memory::cuda,
                      layout);
}

plan::Choice spec_plan(const std::vector<GpuRow>& rows, const topo::GpuPlane& plane, const char* spec,
                       std::size_t bytes = 1 << 20) {
  plan::Layout layout{.node_count = node_count(rows), .local_size = 1};
  plane.apply_to(layout);
  return plan::choose(exec::catalogue(), plan::parse_spec(spec, exec::catalogue()), Collective::all_reduce, bytes,
                      Implementation::automatic, Memory::cuda, layout);
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("identical 8-GPU nodes: one rank per GPU may use NCCL everywhere (host identity in the key)") {
  for (const int nodes : {2, 16}) {
    CAPTURE(nodes);
    const auto rows = cluster(std::vector<NodeSpec>(std::size_t(nodes), NodeSpec{8, 8}));
    // Every node's local rank i drives the same bus id: a bus-id-only key
    // (the bug) would call them one GPU.
    CHECK(rows[0].bus_of(rows[0].device) == rows[8].bus_of(rows[8].device));
    for (int l = 0; l < 8; ++l) CHECK(rows[std::size_t(l)].device == l);  // one GPU per local rank, nearest first
    const topo::GpuPlane plane = plane_of(rows);
    CHECK(plane.unavailable.empty());
    CHECK(plane.world.usable);
    CHECK(plane.node.usable);
    CHECK(plane.cross.usable);
    for (const std::size_t bytes : {std::size_t(8), std::size_t(1) << 16, std::size_t(1) << 30}) {
      const plan::Choice choice = auto_plan(rows, plane, bytes);
      CHECK(choice.name() == "nccl/nccl");
      CHECK(choice.shape == plan::Shape::hierarchical);
      CHECK(plane.refusal(choice).empty());
      CHECK(auto_plan(rows, plane, bytes, Collective::reduce).name() == "nccl");
      CHECK(auto_plan(rows, plane, bytes, Collective::broadcast).name() == "nccl");
    }
    CHECK(plane.refusal(spec_plan(rows, plane, "nccl")).empty());
  }
}

TEST_CASE("8-GPU nodes with every rank bound to NUMA 0: eight GPUs per node, NCCL usable, auto plans NCCL") {
  // Ranks bound to cores and mapped by core: all eight on the first
  // socket, whose NUMA domain holds GPUs 0-3 only.
  const NodeSpec packed{8, 8, "", topo::kComputeDefault, /*one_numa=*/true};
  for (const int nodes : {1, 2}) {
    CAPTURE(nodes);
    const auto rows = cluster(std::vector<NodeSpec>(std::size_t(nodes), packed));
    for (int l = 0; l < 8; ++l) CHECK(rows[std::size_t(l)].device == l);  // 0-3 near, then 4-7
    const topo::GpuPlane plane = plane_of(rows);
    CHECK(plane.unavailable.empty());
    CHECK(plane.world.usable);
    CHECK(plane.node.usable);
    CHECK(plane.cross.usable);
    for (const std::size_t bytes : {std::size_t(8), std::size_t(1) << 20, std::size_t(1) << 30}) {
      const plan::Choice choice = auto_plan(rows, plane, bytes);
      CHECK(choice.name() == (nodes == 1 ? "nccl" : "nccl/nccl"));
      CHECK(plane.refusal(choice).empty());
      CHECK(auto_plan(rows, plane, bytes, Collective::reduce).name() == "nccl");
      CHECK(auto_plan(rows, plane, bytes, Collective::broadcast).name() == "nccl");
    }
    CHECK(plane.refusal(spec_plan(rows, plane, "nccl")).empty());
  }
}

TEST_CASE("one node, one GPU, virtual nodes: NCCL is refused where ranks share the GPU, the default avoids it") {
  const auto four = cluster({{4, 1}}, /*rpn=*/2);  // two virtual nodes of two ranks, one GPU
  topo::GpuPlane plane = plane_of(four);
  CHECK(plane.unavailable.empty());
  CHECK_FALSE(plane.world.usable);
  CHECK_FALSE(plane.node.usable);
  CHECK_FALSE(plane.cross.usable);
  CHECK(contains(plane.world.why, "rank 0 and rank 1 both drive GPU 0000:07:00.0 on host node0"));
  CHECK(auto_plan(four, plane, 1024).name() == "psgpu/rechd");
  CHECK(auto_plan(four, plane, 64 << 20).name() == "psgpu/xring");
  CHECK(auto_plan(four, plane, 1024, Collective::reduce).name() == "tree");
  CHECK(auto_plan(four, plane, 1024, Collective::broadcast).name() == "tree");
  const std::string refused = plane.refusal(spec_plan(four, plane, "nccl"));
  CHECK(contains(refused, "nccl runs NCCL over every rank"));
  CHECK(contains(plane.refusal(spec_plan(four, plane, "nccl/nccl")), "inside each node"));
  CHECK(plane.refusal(spec_plan(four, plane, "psgpu/xring")).empty());

  const auto two = cluster({{2, 1}}, /*rpn=*/1);  // two virtual nodes of one rank
  plane = plane_of(two);
  CHECK_FALSE(plane.world.usable);
  CHECK(plane.node.usable);  // a node of one rank
  CHECK_FALSE(plane.cross.usable);
  CHECK(auto_plan(two, plane, 1024).name() == "nccl/rechd");
  CHECK(contains(plane.refusal(spec_plan(two, plane, "nccl/nccl")), "across nodes"));

  const auto one = cluster({{1, 1}});
  plane = plane_of(one);
  CHECK(plane.world.usable);
  CHECK(auto_plan(one, plane, 1024).name() == "nccl");
}

TEST_CASE("unequal nodes: cross groups hold local ranks below the smallest node's size") {
  auto rows = cluster({{8, 8}, {4, 4}});
  topo::GpuPlane plane = plane_of(rows);
  CHECK(min_local(rows) == 4);
  CHECK(plane.world.usable);
  CHECK(plane.cross.usable);
  CHECK(auto_plan(rows, plane, 1 << 20).name() == "nccl/nccl");

  // Nine ranks on an 8-GPU node: local rank 8 shares a GPU with local rank 4.
  rows = cluster({{9, 8}, {4, 4}});
  plane = plane_of(rows);
  CHECK_FALSE(plane.world.usable);
  CHECK_FALSE(plane.node.usable);
  CHECK(contains(plane.node.why, "node-local (node 0)"));
  CHECK(plane.cross.usable);  // local rank 8 is in no cross group
  CHECK(auto_plan(rows, plane, 1 << 20).name() == "psgpu/nccl");
}

TEST_CASE("a node without GPUs makes CUDA tensors unavailable on every rank, naming the lowest such rank") {
  const auto rows = cluster({{8, 8}, {8, 0}, {8, 0}});
  const topo::GpuPlane plane = plane_of(rows);
  CHECK(contains(plane.unavailable, "rank 8 (host node1) has no GPU: no CUDA device visible to this process"));
  CHECK_FALSE(plane.world.usable);
  CHECK_FALSE(plane.node.usable);
  CHECK_FALSE(plane.cross.usable);
  // No CUDA call runs there; plans show what the shape would run with NCCL
  // everywhere (algorithm_for, strata-topo), and nothing is refused.
  plan::Layout layout{.node_count = 3, .local_size = 8};
  plane.apply_to(layout);
  CHECK((layout.nccl_world && layout.nccl_node && layout.nccl_cross));
  CHECK(auto_plan(rows, plane, 1 << 20).name() == "nccl/nccl");
}

TEST_CASE("a rank whose CUDA is unusable, PROHIBITED and EXCLUSIVE_PROCESS compute modes") {
  auto rows = cluster({{2, 2}, {2, 2}});
  rows[3].device = -1;
  rows[3].problem = "no usable CUDA device: cudaGetDeviceCount failed with cudaErrorInsufficientDriver";
  CHECK(contains(plane_of(rows).unavailable, "rank 3 (host node1) has no GPU: no usable CUDA device"));

  rows = cluster({{2, 2, "", topo::kComputeProhibited}});
  CHECK(contains(plane_of(rows).unavailable, "PROHIBITED"));

  // Exclusive process, one rank per GPU: fine.
  rows = cluster({{4, 4, "", topo::kComputeExclusiveProcess}, {4, 4, "", topo::kComputeExclusiveProcess}});
  CHECK(plane_of(rows).unavailable.empty());
  CHECK(plane_of(rows).world.usable);
  // Two ranks on one exclusive-process GPU: the second could not even make a context.
  rows = cluster({{2, 1, "", topo::kComputeExclusiveProcess}});
  const std::string why = plane_of(rows).unavailable;
  CHECK(contains(why, "ranks 0 and 1 share GPU 0000:07:00.0 on host node0"));
  CHECK(contains(why, "EXCLUSIVE_PROCESS"));
}

TEST_CASE("hosts are told apart by identity, not by name alone") {
  // Two containers on one machine share the boot id and so the identity;
  // two machines with the same hostname do not.
  auto rows = cluster({{1, 1, "same"}, {1, 1, "same"}});
  rows[1].host = rows[0].host + "-other-boot";
  CHECK(plane_of(rows).world.usable);
  rows[1].host = rows[0].host;
  CHECK_FALSE(plane_of(rows).world.usable);

  setenv("NCCL_HOSTID", "rack7-slot3", 1);
  CHECK(topo::host_identity() == "rack7-slot3");
  unsetenv("NCCL_HOSTID");
  CHECK(topo::host_identity() != "rack7-slot3");
  CHECK_FALSE(topo::host_identity().empty());
}

TEST_CASE("replicas: one NCCL rank per replica where every replica of every rank has its own GPU") {
  const auto rows = cluster({{1, 2}, {1, 2}});  // two nodes, one rank each, two GPUs each
  topo::ReplicaPlane plane = topo::decide_replicas(rows, std::vector<std::vector<int>>{{0, 1}, {0, 1}});
  CHECK(plane.mismatch.empty());
  CHECK(plane.invalid.empty());
  CHECK(plane.nccl.usable);  // identical bus ids on two hosts are two GPUs

  plane = topo::decide_replicas(rows, std::vector<std::vector<int>>{{0, 0}, {0, 0}});
  CHECK_FALSE(plane.nccl.usable);
  CHECK(contains(plane.nccl.why, "rank 0 (replica 0) and rank 0 (replica 1) both drive GPU 0000:07:00.0"));

  plane = topo::decide_replicas(rows, std::vector<std::vector<int>>{{0, 1}, {0}});
  CHECK(contains(plane.mismatch, "between 1 and 2 CUDA replicas"));

  plane = topo::decide_replicas(rows, std::vector<std::vector<int>>{{0, 1}, {0, 5}});
  CHECK(contains(plane.invalid, "rank 1 (host node1) puts replica 1 on CUDA device 5, but its process sees 2"));
}

TEST_CASE("property: on random clusters the automatic plan is never refused, and decisions are deterministic") {
  std::mt19937 rng(2024);
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<NodeSpec> nodes;
    const int count = 1 + int(rng() % 6);
    for (int n = 0; n < count; ++n)
      nodes.push_back({1 + int(rng() % 9), 1 + int(rng() % 8), "", topo::kComputeDefault, rng() % 2 == 0});
    const int rpn = rng() % 3 == 0 ? 1 + int(rng() % 4) : 0;
    const auto rows = cluster(nodes, rpn);
    const topo::GpuPlane plane = plane_of(rows);
    const topo::GpuPlane again = plane_of(rows);
    CHECK(plane.world.usable == again.world.usable);
    CHECK(plane.node.why == again.node.why);
    CHECK(plane.cross.why == again.cross.why);
    // NCCL over a group implies NCCL over its subgroups.
    if (plane.world.usable) CHECK((plane.node.usable && plane.cross.usable));
    for (const Collective c : {Collective::all_reduce, Collective::reduce, Collective::broadcast})
      for (const std::size_t bytes : {std::size_t(8), std::size_t(1) << 20, std::size_t(1) << 28}) {
        const plan::Choice choice = auto_plan(rows, plane, bytes, c);
        CAPTURE(choice.describe());
        CHECK(plane.refusal(choice).empty());
      }
  }
}

TEST_CASE("NaN: floating min/max never go to NCCL's own reduction") {
  for (const DataType d : {DataType::f32, DataType::f64, DataType::f16, DataType::bf16}) {
    CHECK_FALSE(plan::nccl_reduces(ReduceOp::min, d));
    CHECK_FALSE(plan::nccl_reduces(ReduceOp::max, d));
    CHECK(plan::nccl_reduces(ReduceOp::sum, d));
    CHECK(plan::nccl_reduces(ReduceOp::prod, d));
  }
  for (const DataType d : {DataType::i8, DataType::u8, DataType::i32, DataType::u32, DataType::i64, DataType::u64})
    CHECK(plan::nccl_reduces(ReduceOp::min, d));
}

TEST_CASE("replica path: replica ranks only for an all-reduce NCCL reduces by NCCL at every level, and the plane is "
          "asked last") {
  const auto known = exec::catalogue();
  const auto planned = [&](const char* spec, Collective collective) {
    return plan::choose(known, plan::parse_spec(spec, known), collective, 1 << 20, Implementation::automatic,
                        Memory::cuda, plan::Layout{.node_count = 2, .local_size = 2});
  };
  const plan::Choice nccl = planned("nccl", Collective::all_reduce), psgpu = planned("psgpu", Collective::all_reduce),
                     hier = planned("nccl/nccl", Collective::all_reduce),
                     hier_host = planned("nccl/xring", Collective::all_reduce),
                     nccl_reduce = planned("nccl", Collective::reduce);
  REQUIRE(hier.shape == plan::Shape::hierarchical);
  int asked = 0;
  const auto path = [&](std::size_t replicas, Collective c, const plan::Choice& choice, ReduceOp op, DataType dtype,
                        bool usable) {
    return plan::replica_path({replicas, c, &choice, op, dtype}, [&] { return ++asked, usable; });
  };
  using P = plan::ReplicaPath;
  CHECK(path(2, Collective::all_reduce, nccl, ReduceOp::sum, DataType::f32, true) == P::replica_ranks);
  CHECK(asked == 1);
  CHECK(path(2, Collective::all_reduce, nccl, ReduceOp::sum, DataType::f32, false) == P::combined);
  CHECK(asked == 2);
  // Nothing else asks the control plane (its question is collective).
  CHECK(path(1, Collective::all_reduce, nccl, ReduceOp::sum, DataType::f32, true) == P::combined);
  CHECK(path(2, Collective::reduce, nccl_reduce, ReduceOp::sum, DataType::f32, true) == P::combined);
  CHECK(path(2, Collective::all_reduce, hier_host, ReduceOp::sum, DataType::f32, true) == P::combined);
  CHECK(path(2, Collective::all_reduce, psgpu, ReduceOp::sum, DataType::f32, true) == P::combined);
  CHECK(path(2, Collective::all_reduce, nccl, ReduceOp::max, DataType::f32, true) == P::combined);
  CHECK(path(2, Collective::all_reduce, nccl, ReduceOp::max, DataType::i32, true) == P::replica_ranks);
  CHECK(asked == 3);
  // Several nodes: nccl/nccl gives every replica an NCCL rank too (review
  // item 6: it combined them through peer copies instead).
  REQUIRE(hier.cross);
  CHECK(path(2, Collective::all_reduce, hier, ReduceOp::sum, DataType::f32, true) == P::replica_ranks);
  CHECK(asked == 4);
}

TEST_CASE("the GPU setup bound: STRATA_GPU_SETUP_TIMEOUT, default 300 s, never unbounded") {
  unsetenv("STRATA_GPU_SETUP_TIMEOUT");
  CHECK(topo::setup_seconds() == 300);
  setenv("STRATA_GPU_SETUP_TIMEOUT", "2.5", 1);
  CHECK(topo::setup_seconds() == 2.5);
  for (const char* bad : {"0", "-1", "soon", "5s", "inf"}) {
    setenv("STRATA_GPU_SETUP_TIMEOUT", bad, 1);
    CHECK_THROWS_AS(topo::setup_seconds(), InvalidArgument);
  }
  unsetenv("STRATA_GPU_SETUP_TIMEOUT");
}
