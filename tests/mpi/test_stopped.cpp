// A stopped rank: the last rank stops itself (SIGSTOP) instead of entering
// an all-reduce; the others call it with a 0.5 s timeout. Every survivor must
// raise DeadlineExceeded within timeout + 1 s naming exactly the stopped
// rank (waiting_for() == {it}, in this communicator's numbering) and saying
// the collective, its number, the algorithm as planned and its own rank;
// the next call raises PeerFailure. Then rank 0 continues the stopped rank
// (SIGCONT), which makes its own late call and so sends its data; the
// survivors' buffers must not change after their error was raised (a
// receive left pending by the timeout must never write into them).
// Every host algorithm, and with STRATA_RANKS_PER_NODE hierarchical plans.
#include <doctest/doctest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

#include "harness.hpp"
#include "specs.hpp"
#include "strata/strata.hpp"

using namespace strata;
using namespace strata::test;

namespace {

constexpr double kTimeout = 0.5;
constexpr std::size_t kCount = std::size_t{1} << 16;  // 256 KiB of f32: past the eager limit, several chunks

std::vector<std::string> specs_under_test() {
  // One rank per node: every host algorithm runs point to point over the
  // whole communicator (no shared memory), so a late peer's messages meet
  // receives the timeout left posted (pscpu posts its result receives into
  // `out` first): the test that nothing writes after the error.
  // (The algorithms themselves run with the check off there, below.)
  const char* per_node = std::getenv("STRATA_RANKS_PER_NODE");
  if (per_node && std::string(per_node) == "1") return {"auto"};
  if (per_node) return {"auto", "pscpu/xring", "xring/rechd"};
  std::vector<std::string> specs = {"auto"};
  for (const std::string& name : algorithm_names()) specs.push_back(name);
  return specs;
}

// `check_calls`: with the call check on, the stopped rank holds everyone up
// in the check itself; off, the survivors are inside the algorithm with its
// receives posted when the timeout hits.
void trial(const std::string& spec, bool check_calls, const StopScene& scene) {
  Communicator comm(MPI_COMM_WORLD, Config{.all_reduce_spec = spec, .check_calls = check_calls});
  const int victim = comm.size() - 1;
  // Out of place: receives into `out` are posted early (pscpu posts every
  // result receive before it sends), the hardest case for "nothing after
  // the error".
  std::vector<float> data(kCount, 1.0f + comm.rank()), out(kCount, -1.0f);
  const Tensor t{data.data(), kCount, DataType::f32}, o{out.data(), kCount, DataType::f32};
  const std::string planned = comm.algorithm_for(t.bytes());
  CAPTURE(spec);
  CAPTURE(planned);
  CAPTURE(check_calls);
  if (comm.rank() == victim) {
    raise(SIGSTOP);  // continued by rank 0 below
    // Late: the others have given up; this call may time out or even
    // complete (the peers' data is still there); either is fine.
    try {
      comm.all_reduce(t, o, ReduceOp::sum, {.timeout_seconds = kTimeout});
    } catch (const Error&) {
    }
  } else {
    const TimedOutcome got =
        run_expecting_deadline([&] { comm.all_reduce(t, o, ReduceOp::sum, {.timeout_seconds = kTimeout}); });
    const bool deadline = got.deadline;
    const std::string& message = got.message;
    const std::vector<int>& waiting_for = got.waiting_for;
    const double elapsed = got.elapsed_seconds;
    const std::uint64_t after_error = hash_bytes(out.data(), o.bytes());
    CHECK_MESSAGE(deadline, "expected DeadlineExceeded, got " << message);
    CHECK_MESSAGE(waiting_for == std::vector<int>{victim}, "must name exactly rank " << victim << ": " << message);
    CHECK_MESSAGE(got.in_earlier_call.empty(), "no rank is in an earlier call: " << message);
    CHECK_MESSAGE(elapsed <= kTimeout + 1.0, "raised after " << elapsed << " s, later than timeout + 1 s");
    MESSAGE("trial spec=" << spec << " planned=" << planned << " check=" << check_calls << " rank " << comm.rank()
                          << ": " << std::string(deadline ? "DeadlineExceeded" : "no DeadlineExceeded") << " after " << elapsed
                          << " s naming [" << rank_list(waiting_for) << "]");
    for (const std::string& part : {std::string("all_reduce #1"), planned, "rank " + std::to_string(comm.rank()),
                                    "rank(s) " + std::to_string(victim) + " did not arrive"})
      CHECK_MESSAGE(message.find(part) != std::string::npos, "no '" << part << "' in: " << message);
    bool peer_failure = false;
    try {
      comm.all_reduce(t, o, ReduceOp::sum, {.timeout_seconds = kTimeout});
    } catch (const PeerFailure&) {
      peer_failure = true;
    } catch (const std::exception&) {
    }
    CHECK(peer_failure);
    // Continue the victim only once every survivor is done with its roll
    // call, so that none hears from it.
    MPI_Barrier(scene.survivors);
    if (comm.rank() == 0) kill(scene.pids[std::size_t(victim)], SIGCONT);
    // The victim makes its late call (sending its data), then everyone meets.
    MPI_Barrier(scene.side);
    CHECK_MESSAGE(hash_bytes(out.data(), o.bytes()) == after_error,
                  "the buffer changed after DeadlineExceeded was raised (a late receive wrote into it)");
    return;
  }
  MPI_Barrier(scene.side);
}

}  // namespace

TEST_CASE("a stopped rank is named exactly, within the timeout + 1 s, and nothing writes after the error") {
  const StopScene scene;
  if (!scene.usable) {
    MESSAGE("needs 3+ ranks on one host (signals go by pid); skipped");
    return;
  }
  for (const std::string& spec : specs_under_test()) trial(spec, true, scene);
  // Point to point (one rank per node), with the check off: the timeout
  // leaves receives into `out` posted, and the stopped rank, continued,
  // sends into them.
  const char* per_node = std::getenv("STRATA_RANKS_PER_NODE");
  if (per_node && std::string(per_node) == "1")
    for (const std::string& spec : algorithm_names()) trial(spec, false, scene);
}
