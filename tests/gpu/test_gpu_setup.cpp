// util::Agreement, the step every GPU setup ends with (the GPU backend's
// creation, each NCCL communicator's unique id and initialisation): with
// failures injected on some ranks, every rank must end with the same
// outcome — the lowest failing rank's error, same type and same text — and
// none may hang: a rank stuck in a long local wait learns of a peer's
// failure at once, and a rank that never arrives makes the others raise
// DeadlineExceeded within the step's own bound. Needs MPI only (runs in
// every build); 3 ranks.
#include <mpi.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <string>

#include "harness_core.hpp"
#include "strata/errors.hpp"
#include "util/agree.hpp"

using namespace strata;
using util::Agreement;

namespace {

int rank = 0, size = 1;

// Whether rank 0 holds the same text (rank 0 itself: always).
bool same_everywhere(const std::string& text) {
  std::uint64_t mine = test::hash_bytes(text.data(), text.size()), first = mine;
  MPI_Bcast(&first, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  return mine == first;
}

// Runs throw_if_failed and returns "<type>: <what>" ("" when nothing was raised).
std::string outcome(Agreement& step) {
  try {
    step.throw_if_failed();
  } catch (const BackendError& e) {
    return std::string("BackendError: ") + e.what();
  } catch (const DeadlineExceeded& e) {
    return std::string("DeadlineExceeded: ") + e.what();
  } catch (const Unavailable& e) {
    return std::string("Unavailable: ") + e.what();
  } catch (const InvalidArgument& e) {
    return std::string("InvalidArgument: ") + e.what();
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  test::start_program_checks("test_gpu_setup", 80);
  rank = test::world_rank();
  size = test::world_size();
  if (size < 3) {
    if (rank == 0) std::printf("SKIP: needs 3 ranks\n");
    MPI_Finalize();
    return 77;
  }
  const util::Deadline bound(30);  // a hang would exceed it; no case needs more than a second

  {
    Agreement step(MPI_COMM_WORLD, "a step that works everywhere", bound);
    test::every_rank_check(outcome(step).empty(), "no failure: nothing is raised on any rank");
  }
  {
    Agreement step(MPI_COMM_WORLD, "creating the test NCCL communicator", bound);
    if (rank == 1) step.fail(Agreement::Kind::backend, "ncclCommInitRankConfig failed: unhandled cuda error");
    const std::string got = outcome(step);
    test::every_rank_check(got.rfind("BackendError: ", 0) == 0, "one rank's failure raises BackendError on every rank");
    test::every_rank_check(got.find("failed on rank 1: ncclCommInitRankConfig failed") != std::string::npos,
          "the message names the failing rank and its reason");
    test::every_rank_check(same_everywhere(got), "the same text on every rank");
  }
  {
    Agreement step(MPI_COMM_WORLD, "creating the GPU backend", bound);
    if (rank == 2) step.fail(Agreement::Kind::unavailable, "GPU 0 is busy (EXCLUSIVE_PROCESS, another job)");
    if (rank == 1) step.fail(Agreement::Kind::deadline, "did not finish");
    const std::string got = outcome(step);
    test::every_rank_check(got.rfind("DeadlineExceeded: ", 0) == 0 && got.find("on rank 1: did not finish") != std::string::npos,
          "several failures: the lowest failing rank's kind and reason win everywhere");
    test::every_rank_check(same_everywhere(got), "the same text on every rank (several failures)");
  }
  {
    // Ranks 0 and 1 are in a long local wait (as in NCCL's bootstrap) when
    // rank 2 fails: they must learn of it from the notice, not wait it out.
    Agreement step(MPI_COMM_WORLD, "creating the node NCCL communicator", bound);
    bool noticed = rank == 2;
    if (rank == 2) {
      step.fail(Agreement::Kind::backend, "ncclGetUniqueId failed: system error");
    } else {
      const util::Deadline give_up(20);
      while (!give_up.expired() && !(noticed = step.peer_failed())) usleep(1000);
    }
    test::every_rank_check(noticed, "a rank waiting locally learns of a peer's failure without waiting for its own bound");
    const std::string got = outcome(step);
    test::every_rank_check(got.find("failed on rank 2: ncclGetUniqueId failed") != std::string::npos && same_everywhere(got),
          "after a notice every rank raises the failing rank's error");
  }
  {
    // Rank 2 arrives only after the others gave up: their step has a bound
    // of 1 s, they raise DeadlineExceeded (no hang) and tell rank 2 so on
    // MPI_COMM_WORLD; then rank 2 completes the exchange.
    MPI_Comm comm = MPI_COMM_NULL;
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    constexpr int kGaveUp = 41;
    std::string got;
    if (rank == 2) {
      const bool told = test::heard_from_every_other_rank(kGaveUp, 60);
      test::rank_check(told, "ranks 0 and 1 said within 60 s that they gave up");
      Agreement step(comm, "creating the late NCCL communicator", bound);
      got = outcome(step);
    } else {
      Agreement step(comm, "creating the late NCCL communicator", util::Deadline(1));
      got = outcome(step);
      const int gave_up = 1;
      MPI_Send(&gave_up, 1, MPI_INT, 2, kGaveUp, MPI_COMM_WORLD);
    }
    test::every_rank_check(rank == 2 ? got.empty()
                    : got.rfind("DeadlineExceeded: ", 0) == 0 && got.find("within its own limit of 1 s") != std::string::npos,
          "a missing rank makes the others raise DeadlineExceeded within the step's own bound");
    MPI_Comm_free(&comm);
  }
  const int status = test::finish_program_checks();
  MPI_Finalize();
  return status;
}
