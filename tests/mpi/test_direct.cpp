// The direct (single-copy) path of the shared-memory collectives
// (lib/host/shm_direct.hpp), white-box: that it runs exactly where it
// should (from each collective's threshold on, where this machine lets a
// process read its peers' memory, never with STRATA_CMA=0 nor where the
// ranks sit near each other), that the placement verdict is the same on
// every rank and agrees with its measurement, that it is
// exact around the thresholds in place and out of place for every root,
// op and several dtypes, with the same bits on every rank, that a rank
// that never arrives is named by DeadlineExceeded, and that a failed
// cross-memory read is a typed error naming the peer and errno.
// Runs on one node (the tests' mpirun); meson runs it with and without
// STRATA_CMA=0.
#include <doctest/doctest.h>
#include <sched.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "../unit/check_throws.hpp"
#include "buffers.hpp"
#include "harness.hpp"
#include "host/cma.hpp"
#include "host/shm_direct.hpp"
#include "host/shm_placement.hpp"
#include "reference.hpp"
#include "strata/strata.hpp"

using namespace strata;
using namespace strata::test;
namespace direct = strata::host::shm::direct;
using strata::host::shm::Placement;

namespace {

// Whether STRATA_CMA is set to `value` ("0": off, "1": even on a crowded
// node; unset or anything else: strata decides).
bool cma_set_to(const char* value) {
  const char* env = std::getenv("STRATA_CMA");
  return env && std::strcmp(env, value) == 0;
}
bool turned_off() { return cma_set_to("0"); }

// STRATA_CMA=1 asks for the direct path even on a node of more than two
// ranks, or where the ranks outnumber the CPUs they may run on together
// (the union of their affinity masks); otherwise strata leaves it off
// there. Every rank of these tests is on one node.
bool allowed_by_node() {
  if (cma_set_to("1")) return true;
  if (world_size() > direct::kMostLocalRanks) return false;
  cpu_set_t mine;
  CPU_ZERO(&mine);
  REQUIRE(sched_getaffinity(0, sizeof mine, &mine) == 0);
  std::vector<cpu_set_t> all(static_cast<std::size_t>(world_size()));
  MPI_Allgather(&mine, sizeof mine, MPI_BYTE, all.data(), sizeof mine, MPI_BYTE, MPI_COMM_WORLD);
  cpu_set_t any;
  CPU_ZERO(&any);
  for (cpu_set_t& set : all) CPU_OR(&any, &any, &set);
  return world_size() <= CPU_COUNT(&any);
}

// Whether this machine lets every rank read every other rank's memory,
// found out here without strata: each rank publishes a word's address and
// its pid, then reads every peer's word with process_vm_readv.
bool machine_allows_cross_memory_reads() {
  const int size = world_size();
  const std::uint64_t word = 0x5157a7a0ull + static_cast<std::uint64_t>(world_rank());
  const std::uint64_t mine[2] = {static_cast<std::uint64_t>(getpid()), reinterpret_cast<std::uintptr_t>(&word)};
  std::vector<std::uint64_t> all(2 * static_cast<std::size_t>(size));
  MPI_Allgather(mine, 2, MPI_UINT64_T, all.data(), 2, MPI_UINT64_T, MPI_COMM_WORLD);
  bool ok = true;
  for (int r = 0; r < size; ++r) {
    if (r == world_rank()) continue;
    std::uint64_t got = 0;
    iovec local{&got, sizeof got};
    iovec remote{reinterpret_cast<void*>(static_cast<std::uintptr_t>(all[2 * static_cast<std::size_t>(r) + 1])),
                 sizeof got};
    const pid_t pid = static_cast<pid_t>(all[2 * static_cast<std::size_t>(r)]);
    ok = ok && process_vm_readv(pid, &local, 1, &remote, 1, 0) == static_cast<ssize_t>(sizeof got) &&
         got == 0x5157a7a0ull + static_cast<std::uint64_t>(r);
  }
  MPI_Barrier(MPI_COMM_WORLD);  // nobody's `word` goes out of scope before every peer read it
  return all_ranks(MPI_COMM_WORLD, ok);
}

// Where the direct path may run at all, the ranks' placement decides unless
// STRATA_CMA=1: STRATA_SHM_PLACEMENT when set, else what strata measured
// when the communicator under test was made (the last measurement of this
// process). Near: the rounds carry every size.
bool placement_given() {
  const char* env = std::getenv("STRATA_SHM_PLACEMENT");
  return env && (std::strcmp(env, "near") == 0 || std::strcmp(env, "far") == 0);
}
bool placement_allows_direct() {
  if (cma_set_to("1")) return true;
  if (placement_given()) return std::strcmp(std::getenv("STRATA_SHM_PLACEMENT"), "far") == 0;
  return strata::host::shm::last_measured_placement().placement != Placement::near;
}

// Whether the machine and STRATA_CMA let the direct path run here at all.
bool direct_possible() {
  static const bool possible =
      world_size() > 1 && !turned_off() && allowed_by_node() && machine_allows_cross_memory_reads();
  return possible;
}

// The sizes that read directly on the communicator made last:
// STRATA_CMA_READS when it names them, else what strata measured then (the
// last measurement of this process; the dear sizes where none ran).
const direct::Sizes& sizes() {
  const char* env = std::getenv("STRATA_CMA_READS");
  if (env && std::strcmp(env, "cheap") == 0) return direct::kCheapReads;
  if (env && std::strcmp(env, "dear") == 0) return direct::kDearReads;
  return direct::sizes_for(direct::last_read_verdict().cost);
}

// Whether a collective of `bytes` bytes should take the direct path here,
// on the communicator made last, given the collective's range.
bool expect_direct(std::size_t bytes, direct::Range range) {
  return direct_possible() && placement_allows_direct() && range.holds(bytes);
}

// Runs `call` and reports whether it took the direct path (the process's
// count of direct calls moved).
template <typename Call>
bool took_direct(Call&& call) {
  const std::uint64_t before = direct::calls();
  call();
  return direct::calls() != before;
}

// Element counts around a threshold: one element short, exactly on it, and
// a count above it that no rank count divides (slices of unequal sizes).
std::vector<std::size_t> counts_around(std::size_t threshold, DataType dtype) {
  const std::size_t element = dtype_size(dtype), at = threshold / element;
  return {at - 1, at, 3 * at + 7};
}

constexpr DataType kDtypes[] = {DataType::f32, DataType::f64, DataType::bf16, DataType::i8, DataType::u64};

}  // namespace

TEST_CASE("the direct path runs in each collective's range, where cross-memory reads work, and never with STRATA_CMA=0, without STRATA_CMA=1 on a crowded node or one of more than two ranks, or between near ranks") {
  Communicator comm(MPI_COMM_WORLD, Config{.all_reduce_spec = "pscpu"});
  const bool possible = expect_direct(SIZE_MAX, {0});
  const direct::Sizes& range = sizes();
  // (std::string: doctest prints a bare const char* chosen by ?: as a pointer.)
  MESSAGE("cross-memory reads "
          << std::string(direct_possible() ? "possible" : "not possible (or STRATA_CMA=0, or one rank, or more ranks than processors)")
          << ", ranks " << std::string(placement_allows_direct() ? "not near" : "near")
          << " here: direct path expected " << std::string(possible ? "from the thresholds" : "never")
                                << "; thresholds all-reduce " << range.all_reduce.from << ", reduce " << range.reduce.from
                                << ", broadcast " << range.broadcast.from << ", all-gather "
                                << range.all_gather.from << " bytes");
  if (turned_off()) CHECK_FALSE(possible);
  for (const std::size_t bytes : {range.all_reduce.from - 4, range.all_reduce.from}) {
    std::vector<float> in(bytes / 4, 1.0f), out(bytes / 4, 0.0f);
    CAPTURE(bytes);
    CHECK(took_direct([&] {
            comm.all_reduce({in.data(), bytes / 4, DataType::f32}, {out.data(), bytes / 4, DataType::f32}, ReduceOp::sum);
          }) == expect_direct(bytes, range.all_reduce));
  }
  // Reduce goes back to the rounds above its range, and so does broadcast
  // where reads are cheap (the dear sizes have no end for it).
  for (const std::size_t bytes : {range.reduce.from - 4, range.reduce.from, range.reduce.up_to,
                                  range.reduce.up_to + 4, 4 * range.reduce.up_to}) {
    std::vector<float> in(bytes / 4, 1.0f), out(bytes / 4, 0.0f);
    const Tensor i{in.data(), bytes / 4, DataType::f32}, o{out.data(), bytes / 4, DataType::f32};
    CAPTURE(bytes);
    CHECK(took_direct([&] { comm.reduce(i, o, ReduceOp::sum, 0); }) == expect_direct(bytes, range.reduce));
  }
  for (const std::size_t bytes : {range.broadcast.from - 4, range.broadcast.from, std::size_t{1} << 20,
                                  (std::size_t{1} << 20) + 4, std::size_t{4} << 20}) {
    std::vector<float> data(bytes / 4, 1.0f);
    CAPTURE(bytes);
    CHECK(took_direct([&] { comm.broadcast({data.data(), bytes / 4, DataType::f32}, world_size() - 1); }) ==
          expect_direct(bytes, range.broadcast));
  }
  // All-gather: the range counts one rank's block.
  for (const std::size_t bytes : {range.all_gather.from - 4, range.all_gather.from, std::size_t{4} << 20}) {
    const std::size_t n = static_cast<std::size_t>(world_size());
    std::vector<float> block(bytes / 4, 1.0f), all(n * bytes / 4, 0.0f);
    CAPTURE(bytes);
    CHECK(took_direct([&] {
            comm.all_gather({block.data(), bytes / 4, DataType::f32}, {all.data(), n * bytes / 4, DataType::f32});
          }) == expect_direct(bytes, range.all_gather));
  }
}

TEST_CASE("the placement verdict is the same on every rank and agrees with the round trip measured") {
  if (!direct_possible() || cma_set_to("1") || placement_given()) {
    MESSAGE("not run: needs the direct path possible, STRATA_CMA not 1 and STRATA_SHM_PLACEMENT not near or far");
    return;
  }
  for (int communicator = 0; communicator < 3; ++communicator) {
    Communicator comm(MPI_COMM_WORLD, Config{.all_reduce_spec = "pscpu"});
    const strata::host::shm::PlacementVerdict v = strata::host::shm::last_measured_placement();
    const std::string name = v.placement == Placement::near  ? "near"
                             : v.placement == Placement::far ? "far"
                                                             : "unmeasured";
    MESSAGE("placement " << name
                         << ", round trip " << v.round_trip_ns << " ns with local rank " << v.farthest);
    REQUIRE(v.placement != Placement::unmeasured);
    // Every rank holds local rank 0's numbers, bit for bit.
    const double mine[3] = {static_cast<double>(v.placement), v.round_trip_ns, static_cast<double>(v.farthest)};
    double lowest[3], highest[3];
    MPI_Allreduce(mine, lowest, 3, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(mine, highest, 3, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    for (int k = 0; k < 3; ++k) CHECK(lowest[k] == highest[k]);
    CHECK(v.farthest >= 1);
    CHECK(v.farthest < world_size());
    if (v.placement == Placement::near) {
      CHECK(v.round_trip_ns > 0);
      CHECK(v.round_trip_ns <= strata::host::shm::kNearRoundTripNs);
    } else {
      // Far: a longer round trip, or a peer that did not answer (0).
      CHECK((v.round_trip_ns > strata::host::shm::kNearRoundTripNs || v.round_trip_ns == 0));
    }
    // The collectives follow the verdict on every rank.
    const std::size_t count = 2 * sizes().all_reduce.from / sizeof(float);
    std::vector<float> in(count, 1.0f), out(count, 0.0f);
    const bool took = took_direct([&] {
      comm.all_reduce({in.data(), count, DataType::f32}, {out.data(), count, DataType::f32}, ReduceOp::sum);
    });
    CHECK(took == (v.placement == Placement::far));
    CHECK(out[count - 1] == static_cast<float>(world_size()));
  }
}

TEST_CASE("the read-cost verdict is the same on every rank, agrees with the read timed, and sets the sizes") {
  if (!direct_possible()) {
    MESSAGE("not run: needs the direct path possible");
    return;
  }
  const char* env = std::getenv("STRATA_CMA_READS");
  const bool given = env && (std::strcmp(env, "cheap") == 0 || std::strcmp(env, "dear") == 0);
  for (int communicator = 0; communicator < 3; ++communicator) {
    Communicator comm(MPI_COMM_WORLD, Config{.all_reduce_spec = "pscpu"});
    const direct::ReadVerdict v = direct::last_read_verdict();
    MESSAGE("reads " << std::string(v.cost == direct::ReadCost::cheap ? "cheap" : v.cost == direct::ReadCost::dear ? "dear" : "unmeasured")
                     << ", a " << direct::kProbeBytes << "-byte read in " << v.read_ns << " ns");
    REQUIRE(v.cost != direct::ReadCost::unmeasured);
    const double mine[2] = {static_cast<double>(v.cost), v.read_ns};
    double lowest[2], highest[2];
    MPI_Allreduce(mine, lowest, 2, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(mine, highest, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    for (int k = 0; k < 2; ++k) CHECK(lowest[k] == highest[k]);
    if (given) {
      // Taken as given, without reading.
      CHECK(v.read_ns == 0);
      CHECK(v.cost == (std::strcmp(env, "cheap") == 0 ? direct::ReadCost::cheap : direct::ReadCost::dear));
    } else {
      // A read of 4 KiB takes at least a system call: never 0 ns, never
      // a failure where the detection's own read worked.
      CHECK(v.read_ns > 0);
      CHECK(v.cost == (v.read_ns <= direct::kCheapReadNs ? direct::ReadCost::cheap : direct::ReadCost::dear));
    }
    // The cheap sizes start lower than the dear ones, and every collective
    // follows the verdict: a size between the two starts reads directly
    // only where reads are cheap (and the placement lets any size read).
    const direct::Sizes& chosen = direct::sizes_for(v.cost);
    CHECK(direct::kCheapReads.reduce.from < direct::kDearReads.reduce.from);
    const std::size_t between = direct::kCheapReads.reduce.from;
    std::vector<float> in(between / 4, 1.0f), out(between / 4, 0.0f);
    const Tensor i{in.data(), between / 4, DataType::f32}, o{out.data(), between / 4, DataType::f32};
    CHECK(took_direct([&] { comm.reduce(i, o, ReduceOp::sum, 0); }) ==
          (placement_allows_direct() && chosen.reduce.holds(between)));
    CHECK(took_direct([&] { comm.all_reduce(i, o, ReduceOp::sum); }) ==
          (placement_allows_direct() && chosen.all_reduce.holds(between)));
    CHECK(out[between / 4 - 1] == static_cast<float>(world_size()));
  }
}

TEST_CASE("with STRATA_CMA unset, ranks that may run on one CPU only take the rounds, exactly") {
  if (cma_set_to("0") || cma_set_to("1") || world_size() < 2 || !machine_allows_cross_memory_reads()) {
    MESSAGE("not run: needs STRATA_CMA unset (or 'auto'), two ranks or more and cross-memory reads");
    return;
  }
  // Every rank pins its thread to the lowest CPU any rank may use (when it
  // may use that one too), creates a communicator there, and restores its
  // mask afterwards.
  cpu_set_t saved;
  REQUIRE(sched_getaffinity(0, sizeof saved, &saved) == 0);
  int lowest = CPU_SETSIZE;
  for (int cpu = 0; cpu < CPU_SETSIZE && lowest == CPU_SETSIZE; ++cpu)
    if (CPU_ISSET(cpu, &saved)) lowest = cpu;
  int shared_cpu = lowest;
  MPI_Allreduce(&lowest, &shared_cpu, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (!all_ranks(MPI_COMM_WORLD, CPU_ISSET(shared_cpu, &saved))) {
    MESSAGE("not run: the ranks have no CPU in common");
    return;
  }
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(shared_cpu, &one);
  REQUIRE(sched_setaffinity(0, sizeof one, &one) == 0);
  const std::size_t count = 2 * sizes().reduce.from / sizeof(float) + 3;  // in the direct range
  std::vector<float> in(count, static_cast<float>(world_rank() + 1)), out(count, -1.0f);
  bool direct = true;
  {
    Communicator comm(MPI_COMM_WORLD, Config{.all_reduce_spec = "pscpu"});
    direct = took_direct([&] {
      comm.reduce(Tensor{in.data(), count, DataType::f32}, Tensor{out.data(), count, DataType::f32}, ReduceOp::sum, 0);
    });
  }
  REQUIRE(sched_setaffinity(0, sizeof saved, &saved) == 0);
  CHECK_FALSE(direct);
  if (world_rank() == 0) {
    const float expected = static_cast<float>(world_size() * (world_size() + 1) / 2);
    CHECK(std::all_of(out.begin(), out.end(), [&](float v) { return v == expected; }));
  }
}

TEST_CASE("all_reduce around the direct threshold: exact, in place and out of place, same bits everywhere") {
  const int nranks = world_size(), rank = world_rank();
  SameBitsLog log;
  for (const std::string spec : {"pscpu", "pscpu#2", "auto"}) {
    Communicator comm(MPI_COMM_WORLD, Config{.all_reduce_spec = spec});
    for (const ReduceOp op : kAllOps)
      for (const DataType dtype : kDtypes)
        for (const std::size_t count : counts_around(sizes().all_reduce.from, dtype))
          for (const bool in_place : {false, true}) {
            Buffer input(count, dtype), expected(count, dtype), in(count, dtype), out(count, dtype);
            fill_input(input.data(), count, dtype, op, rank);
            fill_expected(expected.data(), count, dtype, op, nranks);
            in.copy_from(input);
            Buffer& result = in_place ? in : out;
            const std::string label = "all_reduce spec=" + spec + " op=" + std::string(to_string(op)) + " dtype=" +
                                      std::string(to_string(dtype)) + " count=" + std::to_string(count) +
                                      (in_place ? " in-place" : " out-of-place");
            bool direct_taken = false;
            try {
              direct_taken = took_direct([&] { comm.all_reduce(in.tensor(), result.tensor(), op); });
            } catch (const Error& e) {
              FAIL_CHECK(label << ": threw " << e.what());
              continue;
            }
            // pscpu#2 and auto run pscpu on one node too.
            CHECK_MESSAGE(direct_taken == expect_direct(count * dtype_size(dtype), sizes().all_reduce), label);
            const std::string diff = describe_difference(result.data(), expected.data(), count, dtype);
            CHECK_MESSAGE(diff.empty(), label << ": " << diff);
            if (!in_place)
              CHECK_MESSAGE(first_difference(in.data(), input.data(), count, dtype) == count,
                            label << ": modified its input");
            log.add(label, result.data(), result.size_bytes());
          }
  }
  log.check_same_on_all_ranks(MPI_COMM_WORLD);
}

TEST_CASE("reduce and broadcast around the direct thresholds: every root, in place and out of place, exact") {
  const int nranks = world_size(), rank = world_rank();
  Communicator comm(MPI_COMM_WORLD, Config{.all_reduce_spec = "pscpu"});
  for (int root = 0; root < nranks; ++root)
    for (const ReduceOp op : {ReduceOp::sum, ReduceOp::min, ReduceOp::prod})
      for (const DataType dtype : kDtypes)
        for (const std::size_t count : counts_around(sizes().reduce.from, dtype))
          for (const bool in_place : {false, true}) {
            const std::string label = "reduce root=" + std::to_string(root) + " op=" + std::string(to_string(op)) +
                                      " dtype=" + std::string(to_string(dtype)) + " count=" + std::to_string(count) +
                                      (in_place ? " in-place" : " out-of-place");
            Buffer input(count, dtype), expected(count, dtype), in(count, dtype), out(count, dtype);
            fill_input(input.data(), count, dtype, op, rank);
            fill_expected(expected.data(), count, dtype, op, nranks);
            in.copy_from(input);
            Buffer& result = in_place ? in : out;
            try {
              comm.reduce(in.tensor(), result.tensor(), op, root);
            } catch (const Error& e) {
              FAIL_CHECK(label << ": threw " << e.what());
              continue;
            }
            if (rank == root) {
              const std::string diff = describe_difference(result.data(), expected.data(), count, dtype);
              CHECK_MESSAGE(diff.empty(), label << ": " << diff);
            } else if (!in_place) {
              Buffer untouched(count, dtype);
              CHECK_MESSAGE(first_difference(out.data(), untouched.data(), count, dtype) == count,
                            label << ": wrote into a non-root's out");
            }
            if (!in_place || rank != root)
              CHECK_MESSAGE(first_difference(in.data(), input.data(), count, dtype) == count,
                            label << ": modified an input it does not own");
          }
  SameBitsLog log;
  for (int root = 0; root < nranks; ++root)
    for (const std::size_t count : counts_around(sizes().broadcast.from, DataType::u8)) {
      Buffer want(count, DataType::u8), buffer(count, DataType::u8);
      fill_input(want.data(), count, DataType::u8, ReduceOp::max, root);
      if (rank == root) buffer.copy_from(want);
      const std::string label = "broadcast root=" + std::to_string(root) + " count=" + std::to_string(count);
      try {
        comm.broadcast(buffer.tensor(), root);
      } catch (const Error& e) {
        FAIL_CHECK(label << ": threw " << e.what());
        continue;
      }
      const std::string diff = describe_difference(buffer.data(), want.data(), count, DataType::u8);
      CHECK_MESSAGE(diff.empty(), label << ": " << diff);
      log.add(label, buffer.data(), buffer.size_bytes());
    }
  log.check_same_on_all_ranks(MPI_COMM_WORLD);
}

namespace {

// `count` elements starting `offset` bytes past a page boundary, filled with
// the garbage pattern: where a std::vector's data sits (16 bytes in), or a
// tensor carved out of a larger allocation.
class PageBuffer {
 public:
  PageBuffer(std::size_t count, DataType dtype, std::size_t offset)
      : storage_(static_cast<std::byte*>(std::aligned_alloc(4096, (count * dtype_size(dtype) + offset) / 4096 * 4096 + 8192))),
        data_(storage_ + offset), count_(count), dtype_(dtype) {
    REQUIRE(storage_ != nullptr);
    std::memset(data_, 0xA5, count * dtype_size(dtype));
  }
  ~PageBuffer() { std::free(storage_); }
  PageBuffer(const PageBuffer&) = delete;
  PageBuffer& operator=(const PageBuffer&) = delete;
  void* data() { return data_; }
  Tensor tensor() { return Tensor{data_, count_, dtype_}; }

 private:
  std::byte* storage_;
  std::byte* data_;
  std::size_t count_;
  DataType dtype_;
};

// Runs `call`; false, after reporting what it threw, when it threw.
template <typename Call>
bool ran(const std::string& label, Call&& call) {
  try {
    call();
    return true;
  } catch (const Error& e) {
    FAIL_CHECK(label << ": threw " << e.what());
    return false;
  }
}

// Reports where `got` differs from `want`.
void check_same(const std::string& label, const void* got, const void* want, std::size_t count, DataType dtype) {
  const std::string diff = describe_difference(got, want, count, dtype);
  CHECK_MESSAGE(diff.empty(), label << ": " << diff);
}

}  // namespace

TEST_CASE("all_gather around the direct threshold: in place and out of place, exact; a refused one writes nothing") {
  const int nranks = world_size(), rank = world_rank();
  const std::size_t n = static_cast<std::size_t>(nranks);
  Communicator comm(MPI_COMM_WORLD, Config{.all_reduce_spec = "pscpu"});
  SameBitsLog log;
  for (const DataType dtype : kDtypes)
    for (const std::size_t count : counts_around(sizes().all_gather.from, dtype))
      for (const bool in_place : {false, true}) {
        const std::string label = "all_gather dtype=" + std::string(to_string(dtype)) + " count=" +
                                  std::to_string(count) + (in_place ? " in-place" : " out-of-place");
        GatherCase c(count, dtype, rank, nranks, in_place);
        if (!ran(label, [&] { comm.all_gather({c.source, count, dtype}, {c.all.data(), n * count, dtype}); }))
          continue;
        CHECK_MESSAGE(c.all == c.want, label << ": blocks differ from every rank's input");
        log.add(label, c.all.data(), c.all.size());
      }
  log.check_same_on_all_ranks(MPI_COMM_WORLD);
  if (nranks == 1) return;
  // One rank's blocks are 4 bytes longer: Mismatch everywhere, out untouched.
  const std::size_t count = sizes().all_gather.from / 4 + (rank == nranks - 1 ? 1 : 0);
  std::vector<float> block(count, 3.0f), all(n * count, -7.0f);
  const std::vector<float> before(all);
  CHECK_THROWS_AS(comm.all_gather({block.data(), count, DataType::f32}, {all.data(), n * count, DataType::f32}),
                  Mismatch);
  CHECK(all == before);
  CHECK_FALSE(comm.broken());
}

TEST_CASE("buffers at any offset into a page: every path of all_reduce, reduce and broadcast stays exact") {
  // Copies between such a buffer and the page-aligned shared-memory sets do
  // not go through memcpy where the two addresses differ by other than a
  // multiple of 64 (util/copy.hpp): each size here takes another path
  // (one round, rounds, direct reads, owners).
  const int nranks = world_size(), rank = world_rank();
  const DataType dtype = DataType::f32;
  const ReduceOp op = ReduceOp::sum;
  const std::size_t offsets[][2] = {{0, 16}, {16, 0}, {16, 16}, {4, 36}, {60, 8}};
  SameBitsLog log;
  Communicator comm(MPI_COMM_WORLD, Config{.all_reduce_spec = "pscpu"});
  for (const std::size_t bytes : {std::size_t{3000}, std::size_t{40} << 10, std::size_t{200} << 10, std::size_t{1536} << 10})
    for (const auto& offset : offsets) {
      const std::size_t count = bytes / dtype_size(dtype);
      const std::string where = " count=" + std::to_string(count) + " in+" + std::to_string(offset[0]) + " out+" +
                                std::to_string(offset[1]);
      Buffer expected(count, dtype);
      fill_expected(expected.data(), count, dtype, op, nranks);
      for (const bool in_place : {false, true}) {
        PageBuffer in(count, dtype, offset[0]), out(count, dtype, offset[1]);
        fill_input(in.data(), count, dtype, op, rank);
        PageBuffer& result = in_place ? in : out;
        const std::string label = std::string("all_reduce") + (in_place ? " in-place" : "") + where;
        if (!ran(label, [&] { comm.all_reduce(in.tensor(), result.tensor(), op); })) continue;
        check_same(label, result.data(), expected.data(), count, dtype);
        log.add(label, result.data(), bytes);
      }
      for (const int root : {0, nranks - 1}) {
        PageBuffer in(count, dtype, offset[0]), out(count, dtype, offset[1]);
        fill_input(in.data(), count, dtype, op, rank);
        const std::string label = "reduce root=" + std::to_string(root) + where;
        if (ran(label, [&] { comm.reduce(in.tensor(), out.tensor(), op, root); }) && rank == root)
          check_same(label, out.data(), expected.data(), count, dtype);
      }
      for (const int root : {0, nranks - 1}) {
        Buffer want(count, DataType::f32);
        fill_input(want.data(), count, dtype, op, root);
        PageBuffer buffer(count, dtype, offset[rank == root ? 0 : 1]);
        if (rank == root) std::memcpy(buffer.data(), want.data(), bytes);
        const std::string label = "broadcast root=" + std::to_string(root) + where;
        if (!ran(label, [&] { comm.broadcast(buffer.tensor(), root); })) continue;
        check_same(label, buffer.data(), want.data(), count, dtype);
        log.add(label, buffer.data(), bytes);
      }
    }
  log.check_same_on_all_ranks(MPI_COMM_WORLD);
}

TEST_CASE("direct calls whose buffers are overwritten as soon as they return stay exact (the final wait)") {
  // Every rank scribbles over its buffers the moment a call returns: a rank
  // that returned while a peer still read its buffers would hand that peer
  // the scribbles.
  const int nranks = world_size(), rank = world_rank();
  Communicator comm(MPI_COMM_WORLD, Config{.all_reduce_spec = "pscpu"});
  const std::size_t count = 4 * std::max(sizes().all_reduce.from, sizes().broadcast.from) / sizeof(float) + 5;
  std::vector<float> in(count), out(count);
  const Tensor in_tensor{in.data(), count, DataType::f32}, out_tensor{out.data(), count, DataType::f32};
  int wrong = 0;
  auto expect = [&](const std::vector<float>& v, float want) {
    for (std::size_t i = 0; i < count; i += 509) wrong += v[i] != want;
    wrong += v[count - 1] != want;
  };
  for (int call = 0; call < 100; ++call) {
    const float base = static_cast<float>(call % 64);
    const float want = base * static_cast<float>(nranks) + static_cast<float>(nranks * (nranks - 1) / 2);
    std::fill(in.begin(), in.end(), base + static_cast<float>(rank));
    comm.all_reduce(in_tensor, out_tensor, ReduceOp::sum);
    std::fill(in.begin(), in.end(), -1e6f);
    expect(out, want);
    std::fill(out.begin(), out.end(), -1e6f);

    std::fill(in.begin(), in.end(), base + static_cast<float>(rank));
    comm.all_reduce(in_tensor, in_tensor, ReduceOp::sum);
    expect(in, want);
    std::fill(in.begin(), in.end(), -1e6f);

    const int root = call % nranks;
    std::fill(in.begin(), in.end(), rank == root ? base : -1.0f);
    comm.broadcast(in_tensor, root);
    expect(in, base);
    std::fill(in.begin(), in.end(), -1e6f);

    std::fill(in.begin(), in.end(), base + static_cast<float>(rank));
    comm.reduce(in_tensor, out_tensor, ReduceOp::sum, root);
    std::fill(in.begin(), in.end(), -1e6f);
    if (rank == root) expect(out, want);
  }
  CHECK(wrong == 0);
}

namespace {

// Tests' verdicts for rechecks: alternately near and far, whatever the
// round trip, so that both paths follow each other on one communicator.
Placement alternate(double /*round_trip_ns*/, std::uint64_t epoch) {
  return (epoch / 8) % 2 ? Placement::near : Placement::far;
}

// Rechecks every 8 calls with `rule` while in scope.
struct RecheckEvery8 {
  explicit RecheckEvery8(strata::host::shm::PlacementRule rule) { strata::host::shm::set_recheck_for_testing(8, rule); }
  ~RecheckEvery8() { strata::host::shm::set_recheck_for_testing(0, nullptr); }
};

// Whether this run's communicators measure their placement (and so
// measure it again as calls go by).
bool placement_watched() { return direct_possible() && !cma_set_to("1") && !placement_given() && world_size() == 2; }

}  // namespace

TEST_CASE("the placement is measured again as calls go by; both ranks follow every verdict, exactly") {
  const RecheckEvery8 every8(alternate);
  const int nranks = world_size(), rank = world_rank();
  Communicator comm(MPI_COMM_WORLD, Config{.all_reduce_spec = "pscpu"});
  const CommunicationOptions bounded{.timeout_seconds = 60};  // a disagreement fails, never hangs
  SameBitsLog log;
  int direct_calls = 0, round_calls = 0;
  const std::size_t sizes[] = {16 << 10, 64 << 10, 200 << 10, 1 << 20};
  for (int call = 0; call < 96; ++call) {
    const std::size_t bytes = sizes[static_cast<std::size_t>(call) % 4], count = bytes / sizeof(float);
    const int kind = (call / 4) % 3, root = call % nranks;
    const std::string label = std::string(kind == 0 ? "all_reduce" : kind == 1 ? "reduce" : "broadcast") +
                              " call " + std::to_string(call) + " count " + std::to_string(count);
    Buffer in(count, DataType::f32), out(count, DataType::f32), expected(count, DataType::f32);
    bool direct_taken = false;
    try {
      if (kind == 2) {
        fill_input(expected.data(), count, DataType::f32, ReduceOp::max, root);
        if (rank == root) in.copy_from(expected);
        direct_taken = took_direct([&] { comm.broadcast(in.tensor(), root, bounded); });
        check_same(label, in.data(), expected.data(), count, DataType::f32);
        log.add(label, in.data(), bytes);
      } else {
        fill_input(in.data(), count, DataType::f32, ReduceOp::sum, rank);
        fill_expected(expected.data(), count, DataType::f32, ReduceOp::sum, nranks);
        direct_taken = took_direct([&] {
          if (kind == 0) comm.all_reduce(in.tensor(), out.tensor(), ReduceOp::sum, bounded);
          else comm.reduce(in.tensor(), out.tensor(), ReduceOp::sum, root, bounded);
        });
        if (kind == 0 || rank == root) check_same(label, out.data(), expected.data(), count, DataType::f32);
        if (kind == 0) log.add(label, out.data(), bytes);
      }
    } catch (const Error& e) {
      FAIL_CHECK(label << ": threw " << e.what());
      break;
    }
    // Every rank took the same path (both follow local rank 0's verdict).
    const std::size_t took_it = ranks_where(MPI_COMM_WORLD, direct_taken).size();
    CHECK_MESSAGE((took_it == 0 || took_it == static_cast<std::size_t>(nranks)), label << ": " << took_it << " ranks read directly");
    (direct_taken ? direct_calls : round_calls) += 1;
  }
  log.check_same_on_all_ranks(MPI_COMM_WORLD);
  if (placement_watched()) {
    // The verdicts alternated: both paths ran on this one communicator.
    CHECK(direct_calls > 0);
    CHECK(round_calls > 0);
  } else {
    MESSAGE("placement not watched here (given, forced, off or not two ranks): " << direct_calls << " direct, "
                                                                                << round_calls << " rounds");
  }
}

TEST_CASE("a call that fails where a recheck is due checks nothing: later calls agree and stay exact") {
  const RecheckEvery8 every8(alternate);
  const int nranks = world_size(), rank = world_rank();
  Communicator comm(MPI_COMM_WORLD, Config{.all_reduce_spec = "pscpu"});
  const CommunicationOptions bounded{.timeout_seconds = 60};
  const std::size_t count = (64 << 10) / sizeof(float);
  Buffer in(count, DataType::f32), out(count, DataType::f32), expected(count, DataType::f32);
  fill_input(in.data(), count, DataType::f32, ReduceOp::sum, rank);
  fill_expected(expected.data(), count, DataType::f32, ReduceOp::sum, nranks);
  for (int call = 1; call <= 40; ++call) {
    // Calls 8 and 24 (each the first due for a recheck) do not match when
    // there are ranks to disagree: rank 0 sends 64 KiB, the others 8 B.
    const bool mismatched = nranks > 1 && (call == 8 || call == 24);
    const std::size_t n = mismatched && rank != 0 ? 2 : count;
    try {
      comm.all_reduce({in.data(), n, DataType::f32}, {out.data(), n, DataType::f32}, ReduceOp::sum, bounded);
      CHECK_MESSAGE(!mismatched, "call " << call << " should have raised Mismatch");
      check_same("call " + std::to_string(call), out.data(), expected.data(), count, DataType::f32);
    } catch (const Mismatch&) {
      CHECK_MESSAGE(mismatched, "call " << call << " raised Mismatch");
    } catch (const Error& e) {
      FAIL_CHECK("call " << call << ": threw " << e.what());
      break;
    }
  }
}

TEST_CASE("a rank that never arrives at a direct call is named by DeadlineExceeded") {
  if (world_size() < 2) return;
  const int absent = world_size() - 1;
  const std::size_t count = 4 * sizes().all_reduce.from / sizeof(float);
  {
    Communicator comm(MPI_COMM_WORLD, Config{.all_reduce_spec = "pscpu"});
    std::vector<float> data(count, 1.0f);
    if (world_rank() != absent) {
      const TimedOutcome outcome = run_expecting_deadline([&] {
        comm.all_reduce({data.data(), count, DataType::f32}, {data.data(), count, DataType::f32}, ReduceOp::sum,
                        {.timeout_seconds = 1});
      });
      CHECK_MESSAGE(outcome.deadline, outcome.message);
      CHECK_MESSAGE(std::find(outcome.waiting_for.begin(), outcome.waiting_for.end(), absent) !=
                        outcome.waiting_for.end(),
                    outcome.message);
      CHECK(comm.broken());
    }
    MPI_Barrier(MPI_COMM_WORLD);
  }
  // The job goes on: a fresh communicator works.
  Communicator fresh(MPI_COMM_WORLD, Config{.all_reduce_spec = "pscpu"});
  std::vector<float> data(count, 1.0f);
  fresh.all_reduce({data.data(), count, DataType::f32}, {data.data(), count, DataType::f32}, ReduceOp::sum);
  CHECK(data[count - 1] == static_cast<float>(world_size()));
}

TEST_CASE("a failed cross-memory read is a BackendError naming the peer, its pid and errno") {
  // Our own process, at an address nobody maps: EFAULT.
  std::vector<std::byte> into(64);
  check_throws_naming<BackendError>(
      [&] { host::cma::read(getpid(), reinterpret_cast<const void*>(std::uintptr_t{16}), into.data(), 64, 7); },
      {"local rank 7", std::to_string(getpid()), "errno " + std::to_string(EFAULT), "STRATA_CMA=0"});
  try {
    host::cma::read(getpid(), reinterpret_cast<const void*>(std::uintptr_t{16}), into.data(), 64, 7);
  } catch (const BackendError& e) {
    CHECK(e.backend() == "cma");
    CHECK(e.code() == EFAULT);
  }
}
