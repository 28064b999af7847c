// A rank stopped in the middle of a run of calls: ranks 0-3 all-reduce in a
// loop with a timeout until it fails, and rank 0 stops the last rank
// (SIGSTOP, from a thread) at a random moment. The stop often lands inside
// a call, after the stopped rank sent its data to some ranks but not to
// others: those it served finish that call and time out in the next one,
// the others time out in the call it stopped in. Every survivor must
// raise DeadlineExceeded whose waiting_for() names exactly the stopped rank:
// a survivor still in the earlier call was itself waiting on it, so it is
// reported apart (in_earlier_call(), never the stopped rank), never as
// missing. Several trials per spec (STRATA_TEST_MIDWAY_TRIALS, default 2:
// a trial takes about 1.5 s, the timeout and the roll call's window), every
// host algorithm, and hierarchical plans with STRATA_RANKS_PER_NODE.
#include <doctest/doctest.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "harness.hpp"
#include "specs.hpp"
#include "strata/strata.hpp"

using namespace strata;
using namespace strata::test;

namespace {

constexpr double kTimeout = 0.5;
constexpr std::size_t kCount = std::size_t{1} << 14;  // 64 KiB of f32: a call lasts long enough to be hit inside

int trials_per_spec() {
  const char* env = std::getenv("STRATA_TEST_MIDWAY_TRIALS");
  return env && std::atoi(env) > 0 ? std::atoi(env) : 2;
}

std::vector<std::string> specs_under_test() {
  if (std::getenv("STRATA_RANKS_PER_NODE")) return only_requested({"auto", "pscpu/xring", "xring/rechd", "tree/mpi"});
  std::vector<std::string> specs = {"auto"};
  for (const std::string& name : algorithm_names()) specs.push_back(name);
  return only_requested(specs);
}

// What one survivor saw, gathered on rank 0 for the trial's line.
struct Seen {
  int deadline = 0;
  int named_exactly_victim = 0;
  int earlier = 0;  // how many ranks it reported in an earlier call
};

// One trial. Returns whether any survivor saw a rank in an earlier call
// (the case this test is about).
bool trial(const std::string& spec, unsigned seed, const StopScene& scene) {
  Communicator comm(MPI_COMM_WORLD, Config{.all_reduce_spec = spec});
  const int victim = comm.size() - 1;
  std::vector<float> data(kCount, 1.0f + comm.rank());
  const Tensor t{data.data(), kCount, DataType::f32};
  const CommunicationOptions options{.timeout_seconds = kTimeout};
  CAPTURE(spec);
  CAPTURE(seed);
  MPI_Barrier(scene.side);
  std::thread stopper;
  if (comm.rank() == 0)
    stopper = std::thread([&scene, victim, seed] {
      std::mt19937 random(seed);
      std::this_thread::sleep_for(std::chrono::microseconds(2000 + random() % 30000));
      kill(scene.pids[std::size_t(victim)], SIGSTOP);
    });
  if (comm.rank() == victim) {
    // Runs until stopped; continued below, its call then fails (the others
    // have given up).
    for (;;) try {
        comm.all_reduce(t, t, ReduceOp::sum, options);
      } catch (const Error&) {
        break;
      }
    MPI_Barrier(scene.side);
    return false;
  }
  TimedOutcome got;
  for (int calls = 0;; ++calls) {
    got = run_expecting_deadline([&] { comm.all_reduce(t, t, ReduceOp::sum, options); });
    if (got.message != "no exception") break;
  }
  if (stopper.joinable()) stopper.join();
  const std::vector<int> victim_only = {victim};
  CHECK_MESSAGE(got.deadline, "expected DeadlineExceeded, got " << got.message);
  CHECK_MESSAGE(got.waiting_for == victim_only, "waiting_for must be exactly {" << victim << "}, is {"
                                                    << rank_list(got.waiting_for) << "}: " << got.message);
  const bool earlier_ok = std::none_of(got.in_earlier_call.begin(), got.in_earlier_call.end(),
                                       [&](int r) { return r == victim || r == comm.rank(); });
  CHECK_MESSAGE(earlier_ok, "in_earlier_call {" << rank_list(got.in_earlier_call) << "}: " << got.message);
  if (!got.in_earlier_call.empty())
    CHECK_MESSAGE(got.message.find("rank(s) " + rank_list(got.in_earlier_call) + " answered from an earlier call") !=
                      std::string::npos,
                  got.message);
  const Seen seen{got.deadline, got.waiting_for == victim_only, int(got.in_earlier_call.size())};
  std::vector<Seen> all(std::size_t(comm.size() - 1));
  MPI_Gather(&seen, 3, MPI_INT, all.data(), 3, MPI_INT, 0, scene.survivors);
  int earlier_seen = 0;
  if (comm.rank() == 0) {
    std::string line;
    for (std::size_t r = 0; r < all.size(); ++r) {
      line += " rank " + std::to_string(r) + ": " + (all[r].deadline ? "DeadlineExceeded" : "other") +
              (all[r].named_exactly_victim ? " naming the victim" : " NOT naming only the victim");
      if (all[r].earlier) line += ", " + std::to_string(all[r].earlier) + " in an earlier call";
      earlier_seen += all[r].earlier > 0;
    }
    MESSAGE("trial spec=" << spec << " seed=" << seed << ":" << line);
  }
  MPI_Bcast(&earlier_seen, 1, MPI_INT, 0, scene.survivors);
  // Continue the victim only once every survivor is done with its roll
  // call, so that none hears from it.
  MPI_Barrier(scene.survivors);
  if (comm.rank() == 0) kill(scene.pids[std::size_t(victim)], SIGCONT);
  MPI_Barrier(scene.side);
  return earlier_seen > 0;
}

}  // namespace

TEST_CASE("a rank stopped inside a run of calls is the only one named; ranks in an earlier call are reported apart") {
  const StopScene scene;
  if (!scene.usable) {
    MESSAGE("needs 3+ ranks on one host (signals go by pid); skipped");
    return;
  }
  int trials = 0, with_earlier = 0;
  for (const std::string& spec : specs_under_test())
    for (int i = 0; i < trials_per_spec(); ++i, ++trials)
      with_earlier += trial(spec, 1000u * unsigned(trials) + 17u, scene);
  if (world_rank() == 0)
    MESSAGE(trials << " trials, " << with_earlier << " with a survivor seeing a rank in an earlier call");
}
