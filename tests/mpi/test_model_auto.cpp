// "auto" from the cost model (STRATA_MODEL_FILE, lib/api/model_auto.hpp):
// with a .model file on every rank, an auto communicator over several
// nodes with a core per rank runs, at every size, the plan of the spec the
// model picks for its layout (the same as a communicator configured with
// that spec's text); on one node, or with more ranks than cores, it keeps
// the fixed table; its all-reduces are exact with the
// same bits on every rank, and its map says which; a spec other than auto
// ignores the model; reduce keeps its table. Misuse is InvalidArgument on
// every rank, at construction: the file set on some ranks only, a file
// that cannot be read, a file that says something wrong (on one node too).
// The model used here makes shared memory absurdly slow, so its choices
// differ from the fixed tables' (the test checks that first): a
// communicator that ignored the model would fail. meson runs it on one
// node and on virtual nodes.
#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "buffers.hpp"
#include "harness.hpp"
#include "reference.hpp"
#include "strata/strata.hpp"

using namespace strata;
using namespace strata::test;

namespace {

// Rank 0 writes `text` to a file named for this job; every rank gets the path.
std::string write_shared_file(const std::string& text, const char* suffix) {
  int pid = static_cast<int>(getpid());
  MPI_Bcast(&pid, 1, MPI_INT, 0, MPI_COMM_WORLD);
  const std::string path = "/tmp/strata-test-model-" + std::to_string(pid) + suffix;
  if (world_rank() == 0) std::ofstream(path) << text;
  MPI_Barrier(MPI_COMM_WORLD);
  return path;
}

// Shared memory a second per synchronisation and a microsecond per byte
// (no plan that touches it may win anywhere), and a millisecond per message
// between nodes, so that the ring's many messages from 16 MiB lose to the
// two of halving-doubling by far (the fixed table runs pscpu/xring there).
model::Machine slow_shared_memory() {
  model::Machine m;
  m.shm = {1.0, 1e-6, 1e-6};
  m.intra = {1e-6, 0.2e-9, 0.4e-9};
  m.inter = {1e-3, 1e-9, 1e-9};
  m.gamma = 0.05e-9;
  m.gamma_memory = 0.2e-9;
  m.cache_bytes = 1 << 20;
  return m;
}

// STRATA_MODEL_FILE = `path` on this rank for the scope (unset when null).
class ModelFileSetting {
 public:
  explicit ModelFileSetting(const char* path) {
    if (path)
      setenv("STRATA_MODEL_FILE", path, 1);
    else
      unsetenv("STRATA_MODEL_FILE");
  }
  ~ModelFileSetting() { unsetenv("STRATA_MODEL_FILE"); }
  ModelFileSetting(const ModelFileSetting&) = delete;
  ModelFileSetting& operator=(const ModelFileSetting&) = delete;
};

// Constructs a communicator and expects InvalidArgument naming every
// fragment, on every rank.
void expect_refused_everywhere(std::initializer_list<std::string> fragments) {
  std::string message;
  bool refused = false;
  try {
    Communicator comm(MPI_COMM_WORLD);
  } catch (const InvalidArgument& e) {
    refused = true;
    message = e.what();
  }
  CHECK_MESSAGE(refused, "expected InvalidArgument, got " << (message.empty() ? "a communicator" : message));
  for (const std::string& fragment : fragments)
    CHECK_MESSAGE(message.find(fragment) != std::string::npos, "message '" << message << "' should name " << fragment);
  CHECK(static_cast<int>(ranks_where(MPI_COMM_WORLD, refused).size()) == world_size());
}

const std::vector<std::size_t> kSizes = {4, 64, 1024, 16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20};

}  // namespace

TEST_CASE("auto from the cost model: the model's spec on several nodes, the fixed table on one; exact") {
  Communicator fixed(MPI_COMM_WORLD);  // before STRATA_MODEL_FILE is set
  const std::string path = write_shared_file(model::model_text(slow_shared_memory(), "test model"), ".model");
  const ModelFileSetting setting(path.c_str());
  Communicator modelled(MPI_COMM_WORLD);
  Communicator explicit_auto(MPI_COMM_WORLD, Config{.all_reduce_spec = "auto"});
  // The model picks plans on several nodes with a core per rank; elsewhere auto keeps its table.
  const model::Shape shape = model::shape_of(modelled.topology());
  const bool several_nodes = shape.nodes > 1 && shape.oversubscription <= 1;
  if (const char* want = std::getenv("STRATA_TEST_EXPECT_MODEL"); want && std::string(want) == "1")
    REQUIRE_MESSAGE(several_nodes, "this variant must run the model (several nodes, a core per rank): "
                                       << shape.nodes << " nodes, " << shape.oversubscription << " ranks per core");
  // The fixed table as the model sees it: its plan at every power of two.
  std::vector<SpecTuple> table;
  for (int power = 0; power <= 40; ++power) {
    const std::string plan = fixed.algorithm_for(std::size_t{1} << power);
    if (table.empty() || table.back().algorithm != plan) table.push_back({plan, 1, -1});
    table.back().limit = 1LL << power;
  }
  table.back().limit = -1;
  const double margin = 0.10;  // lib/api/model_auto.cpp's kOverrideMargin
  const std::string expected = several_nodes
                                   ? model::spec_from_model(slow_shared_memory(), shape, AllReduceSpec(table), margin)
                                   : fixed.all_reduce_spec().to_string();
  INFO("expected spec: " << expected);
  Communicator configured(MPI_COMM_WORLD, Config{.all_reduce_spec = expected});
  int differing = 0;  // sizes where the model's choice is not the fixed table's: else this test proves nothing
  for (int power = 0; power <= 30; ++power)
    differing += configured.algorithm_for(std::size_t{1} << power) != fixed.algorithm_for(std::size_t{1} << power);
  if (several_nodes) REQUIRE(differing > 0);
  CHECK(modelled.spec_map().rfind(several_nodes ? "auto (cost model) =" : "auto =", 0) == 0);
  if (!several_nodes) CHECK(modelled.spec_map() == fixed.spec_map());
  CHECK(fixed.spec_map().rfind("auto =", 0) == 0);
  for (int power = 0; power <= 30; ++power) {
    const std::size_t bytes = std::size_t{1} << power;
    CAPTURE(bytes);
    CHECK(modelled.algorithm_for(bytes) == configured.algorithm_for(bytes));
    CHECK(explicit_auto.algorithm_for(bytes) == configured.algorithm_for(bytes));
    if (!several_nodes) CHECK(modelled.algorithm_for(bytes) == fixed.algorithm_for(bytes));
  }
  // Reduce keeps the fixed table (the model has all-reduce formulas only).
  CHECK(modelled.algorithm_for(1 << 20, Collective::reduce) == fixed.algorithm_for(1 << 20, Collective::reduce));

  SameBitsLog log;
  for (std::size_t bytes : kSizes) {
    const std::size_t count = bytes / 4;
    Buffer input(count, DataType::f32), output(count, DataType::f32), expected_sum(count, DataType::f32);
    fill_input(input.data(), count, DataType::f32, ReduceOp::sum, world_rank());
    fill_expected(expected_sum.data(), count, DataType::f32, ReduceOp::sum, world_size());
    modelled.all_reduce({input.data(), count, DataType::f32}, {output.data(), count, DataType::f32}, ReduceOp::sum);
    const std::string label =
        "modelled all_reduce " + std::to_string(bytes) + " B (" + modelled.algorithm_for(bytes) + ")";
    CHECK_MESSAGE(describe_difference(output.data(), expected_sum.data(), count, DataType::f32).empty(),
                  label << ": " << describe_difference(output.data(), expected_sum.data(), count, DataType::f32));
    log.add(label, output.data(), count * 4);
  }
  log.check_same_on_all_ranks(MPI_COMM_WORLD);
  if (world_rank() == 0) std::remove(path.c_str());
}

TEST_CASE("a spec other than auto ignores the model") {
  const std::string path = write_shared_file(model::model_text(slow_shared_memory(), ""), ".model");
  const ModelFileSetting setting(path.c_str());
  Communicator comm(MPI_COMM_WORLD, Config{.all_reduce_spec = "tree"});
  for (std::size_t bytes : kSizes) CHECK(comm.algorithm_for(bytes) == "tree");
  CHECK(comm.spec_map().rfind("spec =", 0) == 0);
  if (world_rank() == 0) std::remove(path.c_str());
}

TEST_CASE("STRATA_MODEL_FILE on some ranks only: InvalidArgument on every rank") {
  if (world_size() < 2) return;
  const std::string path = write_shared_file(model::model_text(slow_shared_memory(), ""), ".model");
  const ModelFileSetting setting(world_rank() == 0 ? path.c_str() : nullptr);
  expect_refused_everywhere({"STRATA_MODEL_FILE", "rank(s) 0", "not at rank(s) 1"});
  if (world_rank() == 0) std::remove(path.c_str());
}

TEST_CASE("a model file that cannot be read: InvalidArgument on every rank, naming it") {
  const ModelFileSetting setting("/nonexistent/strata.model");
  expect_refused_everywhere({"STRATA_MODEL_FILE", "/nonexistent/strata.model", "cannot be read"});
}

TEST_CASE("a model file with a wrong line: InvalidArgument on every rank, naming the line") {
  const std::string path =
      write_shared_file(model::model_text(slow_shared_memory(), "") + "shm.alpha_us = -1\n", ".bad");
  const ModelFileSetting setting(path.c_str());
  expect_refused_everywhere({"STRATA_MODEL_FILE", path + ":", "'shm.alpha_us' given twice"});
  if (world_rank() == 0) std::remove(path.c_str());
}
