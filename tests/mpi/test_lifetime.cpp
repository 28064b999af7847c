// Communicator lifetime: every MPI communicator strata creates (its
// duplicate, the node and cross-node splits) is freed when the Communicator
// goes, including the one a move assignment replaces. The test counts them
// itself through MPI's profiling interface: this executable defines the
// MPI_Comm_* creators and MPI_Comm_free, which libstrata's calls bind to,
// and forwards to PMPI_*.
#include <doctest/doctest.h>

#include <atomic>
#include <cstdlib>
#include <utility>

#include "harness.hpp"
#include "strata/strata.hpp"

namespace {

std::atomic<long> live_comms{0};

int counted(int rc, const MPI_Comm* made) {
  if (rc == MPI_SUCCESS && *made != MPI_COMM_NULL) ++live_comms;
  return rc;
}

long live() { return live_comms.load(); }

int iterations() {
  const char* env = std::getenv("STRATA_TEST_LIFETIME_ITERATIONS");
  return env && *env ? std::atoi(env) : 1000;
}

}  // namespace

extern "C" {
int MPI_Comm_dup(MPI_Comm comm, MPI_Comm* out) { return counted(PMPI_Comm_dup(comm, out), out); }
int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm* out) {
  return counted(PMPI_Comm_split(comm, color, key, out), out);
}
int MPI_Comm_split_type(MPI_Comm comm, int type, int key, MPI_Info info, MPI_Comm* out) {
  return counted(PMPI_Comm_split_type(comm, type, key, info, out), out);
}
int MPI_Comm_create(MPI_Comm comm, MPI_Group group, MPI_Comm* out) {
  return counted(PMPI_Comm_create(comm, group, out), out);
}
int MPI_Comm_free(MPI_Comm* comm) {
  if (comm && *comm != MPI_COMM_NULL) --live_comms;
  return PMPI_Comm_free(comm);
}
}

using namespace strata;

TEST_CASE("a Communicator frees every MPI communicator it created") {
  const long before = live();
  long during = 0;
  {
    Communicator comm(MPI_COMM_WORLD);
    during = live();
    CHECK_MESSAGE(during > before, "the counting wrappers see strata's MPI_Comm_dup (" << during << " vs " << before
                                                                                      << ")");
  }
  CHECK(live() == before);
}

TEST_CASE("move assignment frees the replaced communicator's MPI communicators (N times)") {
  const long before = live();
  Communicator comm(MPI_COMM_WORLD);
  const long one = live() - before;
  const int n = iterations();
  for (int i = 0; i < n; ++i) comm = Communicator(MPI_COMM_WORLD);
  CHECK_MESSAGE(live() - before == one,
                n << " move assignments left " << (live() - before) << " live communicators, one Communicator holds " << one);
  // Move construction hands them over without creating or freeing any.
  Communicator moved(std::move(comm));
  CHECK(live() - before == one);
  // The moved-to communicator works.
  int x = 1;
  moved.all_reduce({&x, 1, DataType::i32}, {&x, 1, DataType::i32}, ReduceOp::sum);
  CHECK(x == test::world_size());
}
