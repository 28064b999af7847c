// The call check carries small calls (exec/check_record.hpp): where the
// check is an MPI all-reduce (several nodes) and the plan is MPI's own
// collective, an all-reduce, reduce or broadcast of at most
// plan::kCheckCarriesBytes travels inside the check's record, so it costs
// one MPI all-reduce, not two MPI collectives; so does an all-gather of at
// most that many bytes in all, whatever its plan. The test counts strata's
// MPI_Allreduce, MPI_Iallreduce, MPI_Reduce and MPI_Bcast calls through the
// MPI profiling interface (this executable defines them and forwards to
// PMPI_*), and checks the carried results bit for bit against the exact
// reference at the size limit and one element past it, for every dtype,
// op and root, in place and out of place, with and without a timeout (a
// reduce's other ranks' outputs untouched). meson runs it on one node
// (nothing is carried: the check is a shared-memory round) and on virtual
// nodes. Mismatches of carried calls are in test_misuse.
#include <doctest/doctest.h>

#include <algorithm>
#include <functional>
#include <utility>
#include <string>
#include <vector>

#include "buffers.hpp"
#include "exact.hpp"
#include "harness.hpp"
#include "plan/algorithm.hpp"
#include "reference.hpp"
#include "strata/strata.hpp"

using namespace strata;
using namespace strata::test;

namespace {

// MPI all-reduces started while `counting` is set (by this thread).
bool counting = false;
int blocking_calls = 0, nonblocking_calls = 0, rooted_calls = 0;  // rooted: MPI_Reduce, MPI_Bcast
int sends = 0;  // MPI_Isend: the algorithms' point-to-point messages

}  // namespace

extern "C" int MPI_Isend(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm,
                         MPI_Request* request) {
  sends += counting;
  return PMPI_Isend(buf, count, type, dest, tag, comm, request);
}

extern "C" int MPI_Allreduce(const void* in, void* out, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm) {
  blocking_calls += counting;
  return PMPI_Allreduce(in, out, count, type, op, comm);
}

extern "C" int MPI_Reduce(const void* in, void* out, int count, MPI_Datatype type, MPI_Op op, int root,
                          MPI_Comm comm) {
  rooted_calls += counting;
  return PMPI_Reduce(in, out, count, type, op, root, comm);
}

extern "C" int MPI_Bcast(void* buffer, int count, MPI_Datatype type, int root, MPI_Comm comm) {
  rooted_calls += counting;
  return PMPI_Bcast(buffer, count, type, root, comm);
}

extern "C" int MPI_Iallreduce(const void* in, void* out, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm,
                              MPI_Request* request) {
  nonblocking_calls += counting;
  return PMPI_Iallreduce(in, out, count, type, op, comm, request);
}

namespace {

struct Counted {
  int blocking = 0, nonblocking = 0;
};

// One all_reduce of `count` f32 ones; the MPI all-reduces it started.
Counted count_calls(Communicator& comm, std::size_t count, const CommunicationOptions& options = {}) {
  std::vector<float> v(count, 1.0f);
  blocking_calls = nonblocking_calls = 0;
  counting = true;
  comm.all_reduce({v.data(), count, DataType::f32}, {v.data(), count, DataType::f32}, ReduceOp::sum, options);
  counting = false;
  CHECK(v.front() == float(comm.size()));
  return {blocking_calls, nonblocking_calls};
}

bool several_nodes() { return std::getenv("STRATA_RANKS_PER_NODE") != nullptr; }

constexpr std::size_t kCarriedFloats = plan::kCheckCarriesBytes / sizeof(float);

// This rank's input of a reduction with `op` and its exact result over every rank.
struct ExactCase {
  Buffer input, expected;
  ExactCase(std::size_t count, DataType dtype, ReduceOp op) : input(count, dtype), expected(count, dtype) {
    fill_input(input.data(), count, dtype, op, world_rank());
    fill_expected(expected.data(), count, dtype, op, world_size());
  }
};

}  // namespace

TEST_CASE("a small all-reduce across nodes is one MPI all-reduce: the check's, carrying the data") {
  if (world_size() < 2) return;
  Communicator automatic(MPI_COMM_WORLD), mpi(MPI_COMM_WORLD, Config{.all_reduce_spec = "mpi"});
  const Counted tiny = count_calls(automatic, 2), limit = count_calls(mpi, kCarriedFloats),
                past = count_calls(mpi, kCarriedFloats + 1),
                bounded = count_calls(automatic, 2, {.timeout_seconds = 60});
  if (several_nodes()) {
    // auto's table runs mpi up to the limit on several nodes.
    CHECK(automatic.algorithm_for(8) == "mpi");
    CHECK(tiny.blocking == 1);
    CHECK(limit.blocking == 1);
    CHECK(past.blocking == 2);  // the check, then the call
    CHECK(bounded.blocking == 0);
    CHECK(bounded.nonblocking == 1);  // with a deadline, polled
  } else {
    // One node: the check is a shared-memory round; mpi's call is MPI's.
    CHECK(tiny.blocking + tiny.nonblocking == 0);
    CHECK(limit.blocking == 1);
    CHECK(past.blocking == 1);
  }
  // Without the check nothing carries: mpi's own call alone.
  Communicator unchecked(MPI_COMM_WORLD, Config{.all_reduce_spec = "mpi", .check_calls = false});
  CHECK(count_calls(unchecked, 2).blocking == 1);
}

TEST_CASE("a small reduce or broadcast across nodes is one MPI all-reduce too") {
  if (world_size() < 2) return;
  Communicator automatic(MPI_COMM_WORLD), mpi(MPI_COMM_WORLD, Config{.all_reduce_spec = "mpi"});
  const int last = world_size() - 1;
  // MPI all-reduces and MPI_Reduce/MPI_Bcast calls of one call.
  const auto calls = [](const std::function<void()>& call) {
    blocking_calls = nonblocking_calls = rooted_calls = 0;
    counting = true;
    call();
    counting = false;
    return std::pair{blocking_calls + nonblocking_calls, rooted_calls};
  };
  for (Communicator* comm : {&automatic, &mpi})
    for (const std::size_t count : {std::size_t{2}, kCarriedFloats, kCarriedFloats + 1}) {
      std::vector<float> in(count, 1.0f), out(count, 0.0f), buffer(count, float(comm->rank()));
      const Tensor tin{in.data(), count, DataType::f32}, tout{out.data(), count, DataType::f32};
      const auto reduce = calls([&] { comm->reduce(tin, tout, ReduceOp::sum, last); });
      const auto broadcast = calls([&] { comm->broadcast({buffer.data(), count, DataType::f32}, last); });
      if (comm->rank() == last) CHECK(out.front() == float(comm->size()));
      CHECK(buffer.back() == float(last));
      CAPTURE(count);
      if (!several_nodes() || count > kCarriedFloats) continue;  // (auto past the limit runs pscpu/tree)
      CHECK(reduce == std::pair{1, 0});
      CHECK(broadcast == std::pair{1, 0});
    }
  if (several_nodes()) {
    std::vector<float> v(kCarriedFloats + 1, 1.0f);
    const auto past = calls([&] { mpi.broadcast({v.data(), v.size(), DataType::f32}, 0); });
    CHECK(past == std::pair{1, 1});  // the check, then MPI_Bcast
  }
}

TEST_CASE("carried reduces and broadcasts are exact at the limit and past it, for every root") {
  const int nranks = world_size();
  Communicator comm(MPI_COMM_WORLD, Config{.all_reduce_spec = "mpi"});
  SameBitsLog log;
  for (DataType dtype : kAllDtypes) {
    const std::size_t limit = plan::kCheckCarriesBytes / dtype_size(dtype);
    for (std::size_t count : {std::size_t{1}, limit, limit + 1})
      for (int root = 0; root < nranks; ++root)
        for (const double timeout : {0.0, 60.0}) {
          const std::string where = std::string(to_string(dtype)) + " count=" + std::to_string(count) +
                                    " root=" + std::to_string(root) + " timeout=" + std::to_string(timeout);
          for (ReduceOp op : kAllOps) {
            const ExactCase c(count, dtype, op);
            check_exact_reduce(comm, "reduce " + std::string(to_string(op)) + " " + where, c.input, c.expected, op,
                               root, false, false, {.timeout_seconds = timeout});
          }
          Buffer sent(count, dtype);
          fill_input(sent.data(), count, dtype, ReduceOp::sum, root);
          check_exact_broadcast(comm, "broadcast " + where, sent, root, {.timeout_seconds = timeout}, log);
        }
  }
  log.check_same_on_all_ranks(MPI_COMM_WORLD);
}

TEST_CASE("carried all-reduces are exact, with the same bits on every rank, at the limit and past it") {
  Communicator comm(MPI_COMM_WORLD, Config{.all_reduce_spec = "mpi"});
  SameBitsLog log;
  for (DataType dtype : kAllDtypes) {
    const std::size_t limit = plan::kCheckCarriesBytes / dtype_size(dtype);
    for (ReduceOp op : kAllOps)
      for (std::size_t count : {std::size_t{1}, limit, limit + 1})
        for (const double timeout : {0.0, 60.0})
          for (const bool in_place : {false, true}) {
            const ExactCase c(count, dtype, op);
            const std::string label = std::string(to_string(dtype)) + " " + std::string(to_string(op)) +
                                      " count=" + std::to_string(count) + " timeout=" + std::to_string(timeout) +
                                      (in_place ? " in place" : " out of place");
            check_exact_all_reduce(comm, label, c.input, c.expected, op, in_place, {.timeout_seconds = timeout}, log);
          }
  }
  log.check_same_on_all_ranks(MPI_COMM_WORLD);
}

TEST_CASE("a small all_gather across nodes rides in the check whatever the plan: exact, in place, same bits") {
  const int nranks = world_size(), rank = world_rank();
  const std::size_t n = static_cast<std::size_t>(nranks);
  SameBitsLog log;
  for (const char* spec : {"auto", "xring", "rechd", "mpi"}) {
    Communicator comm(MPI_COMM_WORLD, Config{.all_reduce_spec = spec});
    for (DataType dtype : {DataType::u8, DataType::f32, DataType::f64}) {
      const std::size_t element = dtype_size(dtype), limit = plan::kCheckCarriesBytes / (n * element);
      for (std::size_t count : {std::size_t{1}, limit, limit + 1})
        for (const double timeout : {0.0, 60.0})
          for (const bool in_place : {false, true}) {
            const std::string label = std::string(spec) + " " + std::string(to_string(dtype)) + " count=" +
                                      std::to_string(count) + " timeout=" + std::to_string(timeout) +
                                      (in_place ? " in place" : " out of place");
            GatherCase c(count, dtype, rank, nranks, in_place);
            blocking_calls = nonblocking_calls = sends = 0;
            counting = true;
            comm.all_gather({c.source, count, dtype}, {c.all.data(), n * count, dtype}, {.timeout_seconds = timeout});
            counting = false;
            CHECK_MESSAGE(c.all == c.want, label << ": blocks differ from every rank's input");
            log.add(label, c.all.data(), c.all.size());
            if (several_nodes() && nranks > 1 && count <= limit) {
              CAPTURE(label);
              CHECK(blocking_calls + nonblocking_calls == 1);  // the check's, carrying every block
              CHECK(sends == 0);
            }
          }
    }
  }
  log.check_same_on_all_ranks(MPI_COMM_WORLD);
  if (nranks < 2) return;
  // One rank's blocks are one element longer: Mismatch everywhere, nothing written.
  Communicator comm(MPI_COMM_WORLD);
  const std::size_t count = (rank == nranks - 1 ? 2 : 1);
  std::vector<float> block(count, 3.0f), all(n * count, -7.0f);
  const std::vector<float> before(all);
  CHECK_THROWS_AS(comm.all_gather({block.data(), count, DataType::f32}, {all.data(), n * count, DataType::f32}),
                  Mismatch);
  CHECK(all == before);
}

TEST_CASE("a carried call that ranks disagree on raises Mismatch everywhere and writes nothing") {
  if (world_size() < 2) return;
  Communicator comm(MPI_COMM_WORLD, Config{.all_reduce_spec = "mpi"});
  const bool deviant = comm.rank() == comm.size() - 1;
  for (const double timeout : {0.0, 60.0}) {
    std::vector<float> in(11, 1.0f), out(11, -7.0f);
    const std::size_t count = deviant ? 11 : 10;
    bool mismatch = false;
    try {
      comm.all_reduce({in.data(), count, DataType::f32}, {out.data(), count, DataType::f32}, ReduceOp::sum,
                      {.timeout_seconds = timeout});
    } catch (const Mismatch&) {
      mismatch = true;
    }
    CHECK(mismatch);
    CHECK(std::count(out.begin(), out.end(), -7.0f) == 11);  // the output untouched
    CHECK(count_calls(comm, 3).blocking >= 1);                // and the communicator usable
  }
}
