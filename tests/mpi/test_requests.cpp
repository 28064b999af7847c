// Non-blocking and persistent calls (strata/request.hpp), with and without
// the progress thread, against the exact reference: every collective's
// non-blocking form; several requests outstanding, waited in any order,
// completing in the order started; blocking calls completing the requests
// before them; test() loops; persistent requests started many times on new
// data; a request dropped without wait (completed, nothing written after);
// errors from wait() (invalid arguments on one rank, ranks disagreeing);
// where the progress thread runs a request (a batch's on_pack_done names
// the thread: under MPI_THREAD_MULTIPLE also requests across virtual
// nodes), and a rank that never calls test() or wait() still finishing its
// part on the progress thread; a timeout while a request is outstanding.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "buffers.hpp"
#include "check_throws.hpp"
#include "harness.hpp"
#include "reference.hpp"
#include "strata/strata.hpp"

using namespace strata;
using namespace strata::test;

namespace {

// f32 sum of every rank's pattern, `count` elements: rank-distinct inputs
// per call (`salt`), so a request that ran on another call's data fails.
struct SumCase {
  Buffer input, expected, out;
  SumCase(std::size_t count, int salt) : input(count, DataType::f32), expected(count, DataType::f32), out(count, DataType::f32) {
    fill_input(input.data(), count, DataType::f32, ReduceOp::sum, world_rank() + salt);
    // The reference over ranks salt .. salt + n - 1 is the reference over
    // 0 .. n - 1 of shifted patterns: compute it directly.
    std::vector<float> acc(count, 0.0f), one(count);
    for (int r = 0; r < world_size(); ++r) {
      fill_input(one.data(), count, DataType::f32, ReduceOp::sum, r + salt);
      for (std::size_t i = 0; i < count; ++i) acc[i] += one[i];
    }
    std::memcpy(expected.data(), acc.data(), count * sizeof(float));
  }
  Tensor in() { return input.tensor(); }
  Tensor result() { return out.tensor(); }
  std::string check() const {
    return describe_difference(out.data(), expected.data(), out.count, DataType::f32);
  }
};

// Runs `body` on a fresh communicator over MPI_COMM_WORLD without, then
// with, the progress thread; failures name which.
void with_each_config(const std::function<void(Communicator&)>& body) {
  for (const Config& config : {Config{}, Config{.progress_thread = true}}) {
    const std::string name = config.progress_thread ? "progress thread" : "no progress thread";
    CAPTURE(name);
    Communicator comm(MPI_COMM_WORLD, config);
    body(comm);
  }
}

}  // namespace

TEST_CASE("every non-blocking collective gives the blocking call's result") {
  const int n = world_size(), rank = world_rank();
  with_each_config([&](Communicator& comm) {
    const std::size_t count = 1021, block = 37;
    SumCase all(count, 0);
    Request r1 = comm.iall_reduce(all.in(), all.result(), ReduceOp::sum);
    // reduce to the last rank (max over i32)
    Buffer rin(count, DataType::i32), rout(count, DataType::i32), rwant(count, DataType::i32);
    fill_input(rin.data(), count, DataType::i32, ReduceOp::max, rank);
    fill_expected(rwant.data(), count, DataType::i32, ReduceOp::max, n);
    Request r2 = comm.ireduce(rin.tensor(), rout.tensor(), ReduceOp::max, n - 1);
    // broadcast from rank 0 (u8)
    Buffer bbuf(count, DataType::u8), bwant(count, DataType::u8);
    fill_input(bwant.data(), count, DataType::u8, ReduceOp::max, 0);
    if (rank == 0) bbuf.copy_from(bwant);
    Request r3 = comm.ibroadcast(bbuf.tensor(), 0);
    // reduce_scatter and all_gather (f64)
    Buffer sin(block * n, DataType::f64), sout(block, DataType::f64), swant(block * n, DataType::f64);
    fill_input(sin.data(), block * n, DataType::f64, ReduceOp::sum, rank);
    fill_expected(swant.data(), block * n, DataType::f64, ReduceOp::sum, n);
    Request r4 = comm.ireduce_scatter(sin.tensor(), sout.tensor(), ReduceOp::sum);
    Buffer gin(block, DataType::f64), gout(block * n, DataType::f64), gwant(block * n, DataType::f64);
    fill_input(gin.data(), block, DataType::f64, ReduceOp::max, rank);
    for (int r = 0; r < n; ++r)
      fill_input(static_cast<std::byte*>(gwant.data()) + std::size_t(r) * block * 8, block, DataType::f64, ReduceOp::max, r);
    Request r5 = comm.iall_gather(gin.tensor(), gout.tensor());
    // a batch, in place
    SumCase b1(300, 7), b2(5000, 9);
    b1.out.copy_from(b1.input);
    b2.out.copy_from(b2.input);
    std::vector<Tensor> tensors = {b1.result(), b2.result()};
    Request r6 = comm.ibatch_all_reduce(tensors, ReduceOp::sum);
    // Waited out of order: they still complete in the order started.
    r6.wait();
    CHECK_MESSAGE(all.check().empty(), "the first request is complete once the last one is: " << all.check());
    r3.wait();
    CHECK(r5.test());
    r4.wait();
    r2.wait();
    r1.wait();
    CHECK_MESSAGE(all.check().empty(), all.check());
    if (rank == n - 1) CHECK_MESSAGE(describe_difference(rout.data(), rwant.data(), count, DataType::i32).empty(), "ireduce");
    CHECK_MESSAGE(describe_difference(bbuf.data(), bwant.data(), count, DataType::u8).empty(), "ibroadcast");
    CHECK_MESSAGE(describe_difference(sout.data(), static_cast<std::byte*>(swant.data()) + std::size_t(rank) * block * 8,
                                      block, DataType::f64)
                      .empty(),
                  "ireduce_scatter");
    CHECK_MESSAGE(describe_difference(gout.data(), gwant.data(), block * n, DataType::f64).empty(), "iall_gather");
    CHECK_MESSAGE(b1.check().empty(), "ibatch_all_reduce tensor 0: " << b1.check());
    CHECK_MESSAGE(b2.check().empty(), "ibatch_all_reduce tensor 1: " << b2.check());
    // Completed requests are empty: test() true, wait() returns.
    CHECK(r1.test());
    r1.wait();
  });
}

TEST_CASE("a blocking call completes the requests started before it; test() loops finish") {
  with_each_config([&](Communicator& comm) {
    std::vector<SumCase> cases;
    for (int k = 0; k < 4; ++k) cases.emplace_back(std::size_t(100 + 997 * k), k);
    std::vector<Request> requests;
    for (auto& c : cases) requests.push_back(comm.iall_reduce(c.in(), c.result(), ReduceOp::sum));
    SumCase blocking(64, 11);
    comm.all_reduce(blocking.in(), blocking.result(), ReduceOp::sum);
    // Complete (results in place) though not yet waited for.
    for (auto& c : cases) CHECK_MESSAGE(c.check().empty(), c.check());
    for (auto& r : requests) CHECK(r.test());
    CHECK_MESSAGE(blocking.check().empty(), blocking.check());
    // A test() loop with work between polls (bounded).
    SumCase polled(70001, 3);
    Request r = comm.iall_reduce(polled.in(), polled.result(), ReduceOp::sum);
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    volatile double work = 0;
    while (!r.test() && std::chrono::steady_clock::now() < give_up)
      for (int i = 0; i < 1000; ++i) work = work + i;
    CHECK_FALSE(r.active());
    CHECK_MESSAGE(polled.check().empty(), polled.check());
  });
}

TEST_CASE("persistent requests run again on new data at each start()") {
  with_each_config([&](Communicator& comm) {
    const std::size_t count = 2049;
    Buffer in(count, DataType::i64), out(count, DataType::i64), want(count, DataType::i64);
    Request r = comm.all_reduce_init(in.tensor(), out.tensor(), ReduceOp::sum);
    CHECK(r.persistent());
    CHECK_FALSE(r.active());
    r.wait();  // inactive: returns at once
    CHECK(r.test());
    for (int round = 0; round < 20; ++round) {
      // The data changes between runs; the bound call reads it anew.
      auto* v = static_cast<std::int64_t*>(in.data());
      for (std::size_t i = 0; i < count; ++i) v[i] = std::int64_t(i) * (world_rank() + 1) + round;
      r.start();
      CHECK(r.active());
      CHECK_THROWS_AS(r.start(), InvalidArgument);  // still running
      if (round % 2) {
        r.wait();
      } else {
        while (!r.test()) {}
      }
      const std::int64_t ranks = world_size(), sum_ranks = ranks * (ranks + 1) / 2;
      const auto* got = static_cast<const std::int64_t*>(out.data());
      bool ok = true;
      for (std::size_t i = 0; i < count; ++i) ok &= got[i] == std::int64_t(i) * sum_ranks + round * ranks;
      CHECK_MESSAGE(ok, "round " << round);
    }
    // Every persistent form binds and runs.
    const int n = world_size();
    Buffer whole(7 * std::size_t(n), DataType::f32), part(7, DataType::f32), bc(5, DataType::u8);
    fill_input(whole.data(), 7 * std::size_t(n), DataType::f32, ReduceOp::sum, world_rank());
    Request rs = comm.reduce_scatter_init(whole.tensor(), part.tensor(), ReduceOp::sum);
    Request ag = comm.all_gather_init(part.tensor(), whole.tensor());
    Request rd = comm.reduce_init(part.tensor(), part.tensor(), ReduceOp::max, 0);
    Request bd = comm.broadcast_init(bc.tensor(), n - 1);
    for (Request* p : {&rs, &ag, &rd, &bd}) {
      p->start();
      p->wait();
    }
    Request not_persistent = comm.iall_reduce(part.tensor(), part.tensor(), ReduceOp::sum);
    CHECK_THROWS_AS(not_persistent.start(), InvalidArgument);
    not_persistent.wait();
  });
}

TEST_CASE("a request dropped without wait is completed, and nothing is written afterwards") {
  with_each_config([&](Communicator& comm) {
    SumCase c(100003, 5);
    { Request dropped = comm.iall_reduce(c.in(), c.result(), ReduceOp::sum); }
    CHECK_MESSAGE(c.check().empty(), "the dropped request's result: " << c.check());
    // Overwrite the output; later calls must leave it alone.
    std::memset(c.out.data(), 0x3c, c.out.size_bytes());
    SumCase later(100003, 6);
    comm.all_reduce(later.in(), later.result(), ReduceOp::sum);
    const auto* bytes = static_cast<const unsigned char*>(c.out.data());
    bool untouched = true;
    for (std::size_t i = 0; i < c.out.size_bytes(); ++i) untouched &= bytes[i] == 0x3c;
    CHECK_MESSAGE(untouched, "a completed request's buffer was written afterwards");
    // Move-assigning over an active request completes it first.
    SumCase first(999, 1), second(999, 2);
    Request r = comm.iall_reduce(first.in(), first.result(), ReduceOp::sum);
    r = comm.iall_reduce(second.in(), second.result(), ReduceOp::sum);
    CHECK_MESSAGE(first.check().empty(), first.check());
    r.wait();
    CHECK_MESSAGE(second.check().empty(), second.check());
  });
}

TEST_CASE("errors come from wait(): one rank's invalid arguments, ranks that disagree; the communicator stays usable") {
  const int n = world_size(), rank = world_rank();
  if (n < 2) return;
  with_each_config([&](Communicator& comm) {
    std::vector<float> a(64, 1.0f), b(64, 0.0f);
    // The last rank passes a misaligned output: InvalidArgument there, Mismatch elsewhere.
    Tensor out{b.data(), 64, DataType::f32};
    if (rank == n - 1) out.data = reinterpret_cast<char*>(b.data()) + 1;
    Request bad = comm.iall_reduce({a.data(), 64, DataType::f32}, out, ReduceOp::sum);
    if (rank == n - 1) CHECK_THROWS_AS(bad.wait(), InvalidArgument);
    else CHECK_THROWS_AS(bad.wait(), Mismatch);
    // Different collectives in the same slot: Mismatch on every rank, from wait().
    Request differ = rank == 0 ? comm.ibroadcast({a.data(), 64, DataType::f32}, 0)
                               : comm.iall_reduce({a.data(), 64, DataType::f32}, {b.data(), 64, DataType::f32}, ReduceOp::sum);
    CHECK_THROWS_AS(differ.wait(), Mismatch);
    // Still usable.
    SumCase ok(64, 4);
    Request fine = comm.iall_reduce(ok.in(), ok.result(), ReduceOp::sum);
    fine.wait();
    CHECK_MESSAGE(ok.check().empty(), ok.check());
    CHECK_FALSE(comm.broken());
  });
}

TEST_CASE("where a request runs: the progress thread takes one-node shared-memory requests, the caller the rest") {
  const int n = world_size();
  const char* rpn = std::getenv("STRATA_RANKS_PER_NODE");
  const bool one_node = rpn == nullptr || std::atoi(rpn) >= n;
  Communicator comm(MPI_COMM_WORLD, Config{.progress_thread = true});
  SumCase c(32768, 8);  // 128 KiB: the thread takes requests from 64 KiB
  c.out.copy_from(c.input);
  std::vector<Tensor> tensors = {c.result()};
  std::atomic<int> packs{0};
  std::atomic<bool> on_caller{false};
  const std::thread::id caller = std::this_thread::get_id();
  Request r = comm.ibatch_all_reduce(tensors, ReduceOp::sum, {}, {}, [&](std::size_t) {
    on_caller = std::this_thread::get_id() == caller;
    ++packs;
  });
  // Below MPI_THREAD_MULTIPLE (the harness asks for FUNNELED unless
  // STRATA_TEST_MPI_THREAD=multiple) the thread may not call MPI, so only a
  // one-node shared-memory plan (or a single rank) runs there.
  int level = MPI_THREAD_SINGLE;
  MPI_Query_thread(&level);
  const bool thread_runs_it = one_node || level == MPI_THREAD_MULTIPLE;
  if (thread_runs_it) {
    // Never calling test() or wait(): the progress thread finishes this
    // rank's part on its own (bounded wait, not a timing assertion).
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (packs.load() == 0 && std::chrono::steady_clock::now() < give_up) std::this_thread::yield();
    CHECK_MESSAGE(packs.load() > 0, "the progress thread did not run the request");
  }
  r.wait();
  CHECK(packs.load() > 0);
  CHECK_MESSAGE(on_caller.load() == !thread_runs_it,
                (on_caller.load() ? "ran on the caller's thread" : "ran on the progress thread"));
  CHECK_MESSAGE(c.check().empty(), c.check());
}

TEST_CASE("a timeout while a request is outstanding: DeadlineExceeded from wait() naming the absent rank") {
  const int n = world_size(), rank = world_rank();
  if (n < 2) return;
  with_each_config([&](Communicator& comm) {
    std::vector<float> data(1000, 1.0f);
    const int absent = n - 1;
    if (rank != absent) {
      Request r = comm.iall_reduce({data.data(), 1000, DataType::f32}, {data.data(), 1000, DataType::f32},
                                   ReduceOp::sum, {.timeout_seconds = 1});
      check_throws_naming<DeadlineExceeded>([&] { r.wait(); }, {"all_reduce"});
      CHECK(comm.broken());
      // The next request fails at once with PeerFailure.
      Request after = comm.iall_reduce({data.data(), 1000, DataType::f32}, {data.data(), 1000, DataType::f32},
                                       ReduceOp::sum);
      CHECK_THROWS_AS(after.wait(), PeerFailure);
    }
    MPI_Barrier(MPI_COMM_WORLD);  // the absent rank stays out until the others are done
  });
}
