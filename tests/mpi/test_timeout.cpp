// Timeouts, at 4 ranks: rank 3 constructs the communicator but never enters
// the call; ranks 0-2 call all_reduce with timeout_seconds = 1 and must
// raise DeadlineExceeded naming the collective, its sequence number and
// size, within timeout + 1 s (the bound, the one wall-clock check
// in the suite); at least one of them must name rank 3 as missing; the
// next call on that communicator raises PeerFailure; and the job still ends
// cleanly (every rank reaches MPI_Finalize and exits 0). One fresh
// communicator per registered algorithm.
//
// `mpi` runs MPI's own non-blocking collective, which cannot say which
// peers are missing (so its waiting_for may be empty).
#include <doctest/doctest.h>

#include <chrono>
#include <regex>
#include <string>
#include <vector>

#include "check_throws.hpp"
#include "harness.hpp"
#include "specs.hpp"
#include "strata/strata.hpp"

using namespace strata;
using namespace strata::test;

namespace {

constexpr int kAbsent = 3;
constexpr double kTimeout = 1.0;

void check_timeout(const std::string& algorithm) {
  Communicator comm(MPI_COMM_WORLD, Config{.all_reduce_spec = algorithm});
  const int rank = comm.rank();
  const std::size_t count = 1000;  // 4000 bytes of f32
  std::vector<float> data(count, 1.0f);

  bool deadline = false;
  double elapsed = 0;
  std::string message;
  std::vector<int> waiting_for;
  if (rank != kAbsent) {
    const TimedOutcome got = run_expecting_deadline([&] {
      comm.all_reduce({data.data(), count, DataType::f32}, {data.data(), count, DataType::f32}, ReduceOp::sum,
                      {.timeout_seconds = kTimeout});
    });
    deadline = got.deadline, message = got.message, waiting_for = got.waiting_for, elapsed = got.elapsed_seconds;
    CHECK_MESSAGE(deadline, "expected DeadlineExceeded, got: " << message);
    CHECK_MESSAGE(elapsed >= 0.9 * kTimeout, "raised after " << elapsed << " s, before the timeout");
    CHECK_MESSAGE(elapsed <= kTimeout + 1.0, "raised after " << elapsed << " s, later than timeout + 1 s");
    CHECK_MESSAGE(message.find("all_reduce") != std::string::npos, message);
    CHECK_MESSAGE(std::regex_search(message, std::regex("(#|sequence )1\\b")), "no sequence number in: " << message);
    CHECK_MESSAGE(message.find("4000") != std::string::npos, "no byte count in: " << message);
    CHECK(comm.broken());
    // A broken communicator refuses further calls with a clear error.
    check_throws_naming<PeerFailure>(
        [&] {
          comm.all_reduce({data.data(), count, DataType::f32}, {data.data(), count, DataType::f32}, ReduceOp::sum);
        },
        {"broken"});
  } else {
    CHECK_FALSE(comm.broken());
  }

  // Gather every rank's waiting_for over MPI_COMM_WORLD (strata's own
  // communicator is a duplicate, so this traffic cannot mix with it).
  const int mine = static_cast<int>(waiting_for.size());
  std::vector<int> counts(static_cast<std::size_t>(world_size())), displs(counts.size());
  MPI_Allgather(&mine, 1, MPI_INT, counts.data(), 1, MPI_INT, MPI_COMM_WORLD);
  int total = 0;
  for (std::size_t r = 0; r < counts.size(); ++r) displs[r] = total, total += counts[r];
  std::vector<int> all(static_cast<std::size_t>(total) + 1);
  MPI_Allgatherv(waiting_for.data(), mine, MPI_INT, all.data(), counts.data(), displs.data(), MPI_INT, MPI_COMM_WORLD);
  all.resize(static_cast<std::size_t>(total));
  if (rank == 0 && algorithm != "mpi") {
    bool names_absent = false;
    std::string listing;
    for (std::size_t r = 0; r < counts.size(); ++r) {
      listing += " rank " + std::to_string(r) + ":";
      for (int i = 0; i < counts[r]; ++i) {
        const int peer = all[static_cast<std::size_t>(displs[r] + i)];
        listing += " " + std::to_string(peer);
        names_absent = names_absent || peer == kAbsent;
      }
    }
    CHECK_MESSAGE(names_absent, "no rank's waiting_for names rank " << kAbsent << ";" << listing);
  }
}

}  // namespace

TEST_CASE("timeout: a missing rank gives DeadlineExceeded, then PeerFailure, then a clean finalize") {
  if (world_size() != 4) {
    MESSAGE("the timeout test needs exactly 4 ranks; skipped at " << world_size());
    return;
  }
  for (const std::string& algorithm : only_requested(algorithm_names())) {
    CAPTURE(algorithm);
    check_timeout(algorithm);
  }
}
