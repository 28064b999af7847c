// MPI's return codes are checked everywhere strata calls MPI: a call MPI
// refuses raises BackendError naming the call, never passes unnoticed. The
// roll call's private communicator is made over a communicator MPI refuses
// (MPI_COMM_NULL, with errors returned instead of aborting). And every
// error strata raises begins with the same "strata [host:rank]: ".
#include <atomic>
#include <doctest/doctest.h>
#include <unistd.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "exec/roll_call.hpp"
#include "harness.hpp"
#include "strata/strata.hpp"

using namespace strata;
using namespace strata::test;

namespace {

std::string expected_prefix() {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  return "strata [" + std::string(host) + ":" + std::to_string(world_rank()) + "]: ";
}

}  // namespace

TEST_CASE("an MPI call that fails in the roll call's setup raises BackendError naming it") {
  // Errors on MPI_COMM_NULL go to the handler of MPI_COMM_WORLD (MPI-3) or
  // MPI_COMM_SELF (MPI-4): both return instead of aborting here.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN);
  std::atomic<std::uint64_t> sequence{0};
  std::string message = "no exception";
  try {
    exec::RollCall roll_call(MPI_COMM_NULL, &sequence);
  } catch (const BackendError& e) {
    message = e.what();
    CHECK(e.backend() == "MPI");
    CHECK(e.rank() == world_rank());
  } catch (const std::exception& e) {
    message = std::string("wrong exception: ") + e.what();
  }
  CHECK_MESSAGE(message.find("MPI_Comm_dup") != std::string::npos, message);
  CHECK_MESSAGE(message.rfind(expected_prefix(), 0) == 0, message);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
  MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_ARE_FATAL);
}

TEST_CASE("every kind of error begins with strata [host:rank]") {
  Communicator comm(MPI_COMM_WORLD);
  std::vector<float> a(8, 1.0f);
  const Tensor t{a.data(), a.size(), DataType::f32};
  // What each call raised, or "no exception".
  auto raised = [](const std::function<void()>& call) {
    try {
      call();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no exception");
  };
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"validation", raised([&] { comm.all_reduce({nullptr, 3, DataType::f32}, t, ReduceOp::sum); })},
      {"options", raised([&] { comm.all_reduce(t, t, ReduceOp::sum, {.bytes_per_pack = -1}); })},
      {"root", raised([&] { comm.broadcast(t, -1); })},
      {"config", raised([&] {
         Config config;
         config.chunk_bytes = 3;
         Communicator bad(MPI_COMM_WORLD, config);
       })},
      {"spec", raised([&] { Communicator bad(MPI_COMM_WORLD, Config{.all_reduce_spec = "bogus"}); })},
      {"packing", raised([&] {
         std::vector<Tensor> tensors = {t};
         comm.batch_all_reduce(tensors, ReduceOp::sum, PackingOptions{.num_packs = -1});
       })},
      {"facade", raised([&] { MultiWorkerAllReduce bad(comm, 0); })},
      {"dtype name", raised([] { parse_dtype("f33"); })},
  };
  for (const auto& [what, message] : cases) {
    CAPTURE(what);
    CHECK_MESSAGE(message.rfind(expected_prefix(), 0) == 0, message);
    CHECK_MESSAGE(message.find(expected_prefix(), 1) == std::string::npos, "prefixed twice: " << message);
  }
}
