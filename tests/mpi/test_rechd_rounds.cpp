// rechd's two all-reduce paths, told apart by the messages a rank sends
// (counted through the MPI profiling interface: this executable defines
// MPI_Isend and forwards to PMPI_Isend): up to 8 KiB recursive doubling,
// log2(p) whole-vector exchanges; above, halving + doubling, 2 log2(p).
// Correctness of both is test_all_reduce's (every size there up to 1021
// elements doubles, 100003 halves). Run at 2 and 4 ranks.
#include <doctest/doctest.h>

#include <bit>
#include <vector>

#include "harness.hpp"
#include "strata/strata.hpp"

using namespace strata;
using namespace strata::test;

namespace {
bool counting = false;
int sends = 0;
}  // namespace

extern "C" int MPI_Isend(const void* buffer, int count, MPI_Datatype type, int peer, int tag, MPI_Comm comm,
                         MPI_Request* request) {
  sends += counting;
  return PMPI_Isend(buffer, count, type, peer, tag, comm, request);
}

namespace {

// The point-to-point sends of one rechd all-reduce of `bytes` f32 bytes.
int sends_of(Communicator& comm, std::size_t bytes) {
  std::vector<float> v(bytes / sizeof(float), 1.0f);
  sends = 0;
  counting = true;
  comm.all_reduce({v.data(), v.size(), DataType::f32}, {v.data(), v.size(), DataType::f32}, ReduceOp::sum);
  counting = false;
  CHECK(v.back() == float(comm.size()));
  return sends;
}

}  // namespace

TEST_CASE("rechd doubles up to 8 KiB and halves above") {
  const int n = world_size();
  if (n < 2 || !std::has_single_bit(unsigned(n))) return;  // (folding ranks send otherwise)
  Communicator comm(MPI_COMM_WORLD, Config{.all_reduce_spec = "rechd"});
  const int steps = std::countr_zero(unsigned(n));
  CHECK(sends_of(comm, 8) == steps);
  CHECK(sends_of(comm, 8192) == steps);
  CHECK(sends_of(comm, 8192 + 4) == 2 * steps);
  CHECK(sends_of(comm, 1 << 20) == 2 * steps);
}
