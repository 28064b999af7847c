// The public API's newer parts, through the public headers only: the tuple
// form of all_reduce_spec (AllReduceSpec), the registry listing, plan_for
// and its printable Plan, spec_map, the version macros.
#include <doctest/doctest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "check_throws.hpp"
#include "harness.hpp"
#include "strata/strata.hpp"

using namespace strata;
using strata::test::check_throws_naming;

TEST_CASE("AllReduceSpec: the tuple form equals the string form and prints back to it") {
  const AllReduceSpec tuples{{"pscpu/xring", 2, 65536}, {"pscpu/pscpu", 2, -1}};
  const AllReduceSpec text("pscpu/xring#2:64k:pscpu/pscpu#2");
  CHECK(tuples == text);
  CHECK(tuples.to_string() == "pscpu/xring#2:64k:pscpu/pscpu#2");
  CHECK(AllReduceSpec(tuples.to_string()) == tuples);
  REQUIRE(tuples.select(65536) != nullptr);
  CHECK(tuples.select(65536)->algorithm == "pscpu/xring");
  CHECK(tuples.select(65537)->algorithm == "pscpu/pscpu");
  CHECK(AllReduceSpec().is_auto());
  CHECK(AllReduceSpec().select(1) == nullptr);
  CHECK(AllReduceSpec("auto").is_auto());
  check_throws_naming<InvalidArgument>([] { AllReduceSpec{{"xring", 1, 100}}; }, {"last limit", "-1"});
  check_throws_naming<InvalidArgument>([] { AllReduceSpec{{"bogus", 1, -1}}; }, {"bogus"});
  check_throws_naming<InvalidArgument>([] { AllReduceSpec{{"xring", 0, -1}}; }, {"shards", "0"});
  check_throws_naming<InvalidArgument>([] { AllReduceSpec{{"tree", 1, 4096}, {"xring", 1, 1024}, {"mpi", 1, -1}}; },
                                       {"increase"});
}

TEST_CASE("registered_algorithms lists host and GPU algorithms in every build") {
  std::vector<std::string> host, cuda;
  for (const AlgorithmInfo& a : registered_algorithms()) (a.memory == Memory::host ? host : cuda).push_back(a.name);
  CHECK(host == std::vector<std::string>{"xring", "rechd", "pscpu", "tree", "mpi"});
  CHECK(cuda == std::vector<std::string>{"nccl", "psgpu"});
}

TEST_CASE("plan_for: packs, their tensors and the algorithm each runs, as the calls run them") {
  Communicator comm(MPI_COMM_WORLD, Config{.all_reduce_spec = "tree:4k:xring#2"});
  std::vector<Tensor> tensors = {{nullptr, 100, DataType::f32},
                                 {nullptr, 200, DataType::f32},
                                 {nullptr, 1 << 20, DataType::f32},
                                 {nullptr, 50, DataType::i32}};
  const Plan plan = comm.plan_for(tensors, PackingOptions{}, {.bytes_per_pack = 4096});
  CHECK(plan.collective == Collective::all_reduce);
  CHECK(plan.memory == Memory::host);
  REQUIRE(plan.packs.size() == 3);
  CHECK(plan.packs[0].tensors == std::vector<std::size_t>{0, 1});
  CHECK(plan.packs[0].bytes == 1200);
  CHECK(plan.packs[0].algorithm == "tree");
  CHECK(plan.packs[1].tensors == std::vector<std::size_t>{2});
  CHECK(plan.packs[1].algorithm == "xring#2");
  CHECK(plan.packs[2].dtype == DataType::i32);
  for (const PlannedPack& pack : plan.packs) CHECK(pack.algorithm == comm.algorithm_for(pack.bytes));
  const std::string text = plan.to_string();
  CAPTURE(text);
  CHECK(text.find("all_reduce in 3 pack(s)") != std::string::npos);
  CHECK(text.find("pack 1: f32 x 1048576 (4.0 MiB), tensor 2: xring#2") != std::string::npos);
  CHECK(comm.all_reduce_spec() == AllReduceSpec("tree:4k:xring#2"));
  CHECK(comm.spec_map().find("[0 .. 4096 B: tree]") != std::string::npos);
  // On CUDA memory auto means NCCL; host algorithms named by a spec stay.
  CHECK(Communicator(MPI_COMM_WORLD).algorithm_for(1024, Collective::all_reduce, Memory::cuda) == "nccl");
  check_throws_naming<InvalidArgument>([&] { comm.plan_for(tensors, PackingOptions{.num_packs = -1}); },
                                       {"num_packs", "-1"});
}

TEST_CASE("the facades take the tuple form") {
  Communicator comm(MPI_COMM_WORLD);
  MultiWorkerAllReduce strategy(comm, 1, {{"tree", 1, 1024}, {"pscpu", 1, -1}});
  CHECK(strategy.all_reduce_spec() == "tree:1k:pscpu");
  std::vector<double> value(3000, 1.0 + comm.rank());
  strategy.reduce(ReduceOp::sum, {{value.data(), value.size(), DataType::f64}}, Destination::all_ranks());
  const int n = comm.size();
  CHECK(value.front() == n * (n + 1) / 2.0);
  CHECK(value.back() == n * (n + 1) / 2.0);
}

TEST_CASE("version macros agree with the version string") {
  char text[64];
  std::snprintf(text, sizeof text, "%d.%d.%d", STRATA_VERSION_MAJOR, STRATA_VERSION_MINOR, STRATA_VERSION_PATCH);
  CHECK(std::string(text) == strata::version);
  CHECK(bool(STRATA_HAVE_CUDA) == strata::have_cuda);
}

TEST_CASE("mpi_datatype: an MPI type of the element's size for every DataType, the one strata's mpi algorithm uses") {
  for (int d = 0; d <= static_cast<int>(DataType::u64); ++d) {
    const auto dtype = static_cast<DataType>(d);
    CAPTURE(to_string(dtype));
    const MPI_Datatype type = mpi_datatype(dtype);
    CHECK(type != MPI_DATATYPE_NULL);
    if (type == MPI_DATATYPE_NULL) continue;
    int size = 0;
    MPI_Type_size(type, &size);
    CHECK(static_cast<std::size_t>(size) == dtype_size(dtype));
  }
  CHECK(mpi_datatype(static_cast<DataType>(99)) == MPI_DATATYPE_NULL);
}
