// The integrity check (Config::verify = checksum, docs/RELIABILITY.md,
// "Integrity checks"): a bit flipped at each fault site
// (util/fault.hpp: a shared-memory slot, an MPI receive buffer) in a chosen
// call makes every rank raise Corrupted naming that call, after which the
// communicator still gives exact results; and a clean run of every
// collective, dtype and op under every host algorithm never raises, its
// results exact against the reference.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "buffers.hpp"
#include "harness.hpp"
#include "reference.hpp"
#include "specs.hpp"
#include "strata/strata.hpp"
#include "util/fault.hpp"

using namespace strata;
using namespace strata::test;

namespace {

Config verifying(const std::string& spec) {
  Config config;
  config.all_reduce_spec = spec;
  config.verify = Verification::checksum;
  return config;
}

std::string label_of(const std::string& what, const std::string& spec, DataType dtype, ReduceOp op, std::size_t count) {
  return what + " spec=" + spec + " dtype=" + std::string(to_string(dtype)) + " op=" + std::string(to_string(op)) +
         " count=" + std::to_string(count);
}

// Runs `call`, reporting a strata error instead of letting it escape (the
// test must stay collective).
void clean(const std::string& label, const std::function<void()>& call) {
  try {
    call();
  } catch (const Error& e) {
    FAIL_CHECK(label << ": raised " << std::string(e.what()));
  }
}

void expect_equal(const std::string& label, const void* got, const void* want, std::size_t count, DataType dtype) {
  const std::string difference = describe_difference(got, want, count, dtype);
  CHECK_MESSAGE(difference.empty(), label << ": " << difference);
}

// Every collective once on `comm`, checked against the reference.
void every_collective(Communicator& comm, const std::string& spec, DataType dtype, ReduceOp op, std::size_t count) {
  const int n = comm.size(), rank = comm.rank(), last = n - 1;
  const std::size_t whole = count * static_cast<std::size_t>(n), element = dtype_size(dtype);
  Buffer in(count, dtype), out(count, dtype), want(count, dtype);
  fill_input(in.data(), count, dtype, op, rank);
  fill_expected(want.data(), count, dtype, op, n);

  std::string label = label_of("all_reduce", spec, dtype, op, count);
  clean(label, [&] { comm.all_reduce(in.tensor(), out.tensor(), op); });
  expect_equal(label, out.data(), want.data(), count, dtype);
  label = label_of("all_reduce in place", spec, dtype, op, count);
  clean(label, [&] { comm.all_reduce(in.tensor(), in.tensor(), op); });
  expect_equal(label, in.data(), want.data(), count, dtype);

  fill_input(in.data(), count, dtype, op, rank);
  out.garbage();
  label = label_of("reduce", spec, dtype, op, count);
  clean(label, [&] { comm.reduce(in.tensor(), out.tensor(), op, last); });
  if (rank == last) expect_equal(label, out.data(), want.data(), count, dtype);

  if (op == ReduceOp::sum) {  // the moves: once per dtype
    Buffer root_input(count, dtype);
    fill_input(root_input.data(), count, dtype, op, last);
    fill_input(in.data(), count, dtype, op, rank);
    label = label_of("broadcast", spec, dtype, op, count);
    clean(label, [&] { comm.broadcast(in.tensor(), last); });
    expect_equal(label, in.data(), root_input.data(), count, dtype);

    Buffer gathered(whole, dtype), gathered_want(whole, dtype);
    for (int r = 0; r < n; ++r)
      fill_input(static_cast<std::byte*>(gathered_want.data()) + static_cast<std::size_t>(r) * count * element, count,
                 dtype, op, r);
    fill_input(in.data(), count, dtype, op, rank);
    label = label_of("all_gather", spec, dtype, op, count);
    clean(label, [&] { comm.all_gather(in.tensor(), gathered.tensor()); });
    expect_equal(label, gathered.data(), gathered_want.data(), whole, dtype);
  }

  Buffer scattered_in(whole, dtype), scattered_want(whole, dtype);
  fill_input(scattered_in.data(), whole, dtype, op, rank);
  fill_expected(scattered_want.data(), whole, dtype, op, n);
  out.garbage();
  label = label_of("reduce_scatter", spec, dtype, op, count);
  clean(label, [&] { comm.reduce_scatter(scattered_in.tensor(), out.tensor(), op); });
  expect_equal(label, out.data(),
               static_cast<std::byte*>(scattered_want.data()) + static_cast<std::size_t>(rank) * count * element, count,
               dtype);

  // A batch of three tensors (packed together, and one alone when large).
  Buffer a(count, dtype), b(7, dtype), c(count, dtype), b_want(7, dtype);
  fill_input(a.data(), count, dtype, op, rank);
  fill_input(b.data(), 7, dtype, op, rank);
  fill_input(c.data(), count, dtype, op, rank);
  fill_expected(b_want.data(), 7, dtype, op, n);
  std::vector<Tensor> batch = {a.tensor(), b.tensor(), c.tensor()};
  label = label_of("batch_all_reduce", spec, dtype, op, count);
  clean(label, [&] { comm.batch_all_reduce(batch, op); });
  expect_equal(label, a.data(), want.data(), count, dtype);
  expect_equal(label, b.data(), b_want.data(), 7, dtype);
  expect_equal(label, c.data(), want.data(), count, dtype);
}

// Values of mixed magnitude (1e-6 .. 1e6, both signs): sums round at every
// step, so the float check's rounding bound is what keeps it quiet.
template <typename T>
void mixed_magnitudes(std::vector<T>& v, int rank) {
  for (std::size_t i = 0; i < v.size(); ++i) {
    const double exponent = static_cast<double>((i * 7 + static_cast<std::size_t>(rank) * 13) % 13) - 6;
    const double sign = (i + static_cast<std::size_t>(rank)) % 3 == 0 ? -1 : 1;
    v[i] = static_cast<T>(sign * (1.0 + static_cast<double>(i % 101) / 101.0) * std::pow(10.0, exponent));
  }
}

// What a faulted call did on this rank.
struct Outcome {
  bool corrupted = false;
  std::string message;
};

Outcome run_faulted(const std::function<void()>& call) {
  Outcome outcome;
  try {
    call();
  } catch (const Corrupted& e) {
    outcome.corrupted = true;
    outcome.message = e.what();
  } catch (const Error& e) {
    outcome.message = std::string("raised another error: ") + e.what();
  }
  return outcome;
}

// One fault case: on a fresh verifying communicator, call 1 is clean, call
// 2 is `faulted` with a bit flipped on world rank `victim` at `site`, call
// 3 is a clean all_reduce that must be exact.
void flip_case(const std::string& name, const std::string& spec, util::fault::Site site, std::size_t bit,
               int victim, const std::string& named, const std::function<void(Communicator&)>& faulted) {
  Communicator comm(MPI_COMM_WORLD, verifying(spec));
  const int n = comm.size(), rank = comm.rank();
  const std::string label = name + " spec=" + spec + " victim=" + std::to_string(victim);
  constexpr std::size_t kCount = 5000;
  Buffer in(kCount, DataType::f32), out(kCount, DataType::f32), want(kCount, DataType::f32);
  fill_input(in.data(), kCount, DataType::f32, ReduceOp::sum, rank);
  fill_expected(want.data(), kCount, DataType::f32, ReduceOp::sum, n);
  clean(label + " (call 1, clean)", [&] { comm.all_reduce(in.tensor(), out.tensor(), ReduceOp::sum); });

  const std::uint64_t flips_before = util::fault::flips();
  util::fault::arm(site, 2, victim, bit);
  const Outcome outcome = run_faulted([&] { faulted(comm); });
  util::fault::disarm();
  const bool flipped = util::fault::flips() > flips_before;
  const bool any_flipped = !all_ranks(MPI_COMM_WORLD, !flipped);
  CHECK_MESSAGE(any_flipped, label << ": the call never passed the fault site (nothing flipped)");
  if (any_flipped) {
    CHECK_MESSAGE(outcome.corrupted, label << ": no Corrupted on rank " << rank << " " << outcome.message);
    CHECK_MESSAGE(outcome.message.find(named + " #2") != std::string::npos,
                  label << ": the message does not name " << named << " #2: " << outcome.message);
  }
  const std::vector<int> raised = ranks_where(MPI_COMM_WORLD, outcome.corrupted);
  const bool everywhere = !any_flipped || static_cast<int>(raised.size()) == n;
  CHECK_MESSAGE(everywhere,
                label << ": Corrupted only on ranks " << rank_list(raised));

  out.garbage();
  clean(label + " (call 3, after)", [&] { comm.all_reduce(in.tensor(), out.tensor(), ReduceOp::sum); });
  expect_equal(label + " (call 3, after)", out.data(), want.data(), kCount, DataType::f32);
}

// The faulted calls: f32 sums of reference data (|v| <= 15, so bit 30, the
// highest exponent bit, moves an element by at least 2), an i32 sum (any
// flipped bit shows in the wrapping sum) and the moves (exact hashes).
struct Faulted {
  std::string name, named;
  std::size_t bit;
  std::function<void(Communicator&)> call;
};

std::vector<Faulted> faulted_calls(int root, std::size_t count) {
  auto filled = [count](DataType dtype, std::size_t times, int rank) {
    auto buffer = std::make_shared<Buffer>(count * times, dtype);
    fill_input(buffer->data(), count * times, dtype, ReduceOp::sum, rank);
    return buffer;
  };
  return {
      {"all_reduce f32 sum", "all_reduce", 30,
       [=](Communicator& c) {
         auto b = filled(DataType::f32, 1, c.rank());
         c.all_reduce(b->tensor(), b->tensor(), ReduceOp::sum);
       }},
      {"all_reduce i32 sum", "all_reduce", 17,
       [=](Communicator& c) {
         auto b = filled(DataType::i32, 1, c.rank());
         c.all_reduce(b->tensor(), b->tensor(), ReduceOp::sum);
       }},
      {"all_reduce f64 mean", "all_reduce", 62,
       [=](Communicator& c) {
         auto b = filled(DataType::f64, 1, c.rank());
         c.all_reduce(b->tensor(), b->tensor(), ReduceOp::mean);
       }},
      {"reduce f32 sum", "reduce", 30,
       [=](Communicator& c) {
         auto b = filled(DataType::f32, 1, c.rank());
         auto out = filled(DataType::f32, 1, c.rank());
         c.reduce(b->tensor(), out->tensor(), ReduceOp::sum, root);
       }},
      {"broadcast u8", "broadcast", 3,
       [=](Communicator& c) {
         auto b = filled(DataType::u8, 4, c.rank());
         c.broadcast(b->tensor(), root);
       }},
      {"reduce_scatter f32 sum", "reduce_scatter", 30,
       [=](Communicator& c) {
         auto b = filled(DataType::f32, static_cast<std::size_t>(c.size()), c.rank());
         auto out = filled(DataType::f32, 1, c.rank());
         c.reduce_scatter(b->tensor(), out->tensor(), ReduceOp::sum);
       }},
      {"all_gather f32", "all_gather", 30,
       [=](Communicator& c) {
         auto b = filled(DataType::f32, 1, c.rank());
         auto out = filled(DataType::f32, static_cast<std::size_t>(c.size()), c.rank());
         c.all_gather(b->tensor(), out->tensor());
       }},
      {"batch_all_reduce f32 sum", "batch_all_reduce", 30,
       [=](Communicator& c) {
         auto a = filled(DataType::f32, 1, c.rank());
         auto b = filled(DataType::f32, 1, c.rank());
         std::vector<Tensor> batch = {a->tensor(), b->tensor()};
         c.batch_all_reduce(batch, ReduceOp::sum);
       }},
  };
}

}  // namespace

TEST_CASE("a clean run of every collective, dtype and op never raises Corrupted, its results exact") {
  std::vector<std::string> specs = {"auto"};
  for (const std::string& name : algorithm_names()) specs.push_back(name);
  for (const std::string& spec : only_requested(specs)) {
    Communicator comm(MPI_COMM_WORLD, verifying(spec));
    for (const std::size_t count : {std::size_t{1}, std::size_t{1000}, std::size_t{40000}})
      for (const DataType dtype : kAllDtypes)
        for (const ReduceOp op : kAllOps) every_collective(comm, spec, dtype, op, count);
  }
}

TEST_CASE("sums that round at every step stay within the float check's bound") {
  for (const std::string& spec : only_requested({"auto", "xring", "rechd", "tree"})) {
    if (spec != "auto" && !registered(spec)) continue;
    Communicator comm(MPI_COMM_WORLD, verifying(spec));
    for (const std::size_t count : {std::size_t{3}, std::size_t{4099}, std::size_t{300000}}) {
      std::vector<float> f(count);
      std::vector<double> d(count);
      mixed_magnitudes(f, comm.rank());
      mixed_magnitudes(d, comm.rank());
      for (const ReduceOp op : {ReduceOp::sum, ReduceOp::mean}) {
        clean(label_of("mixed all_reduce", spec, DataType::f32, op, count),
              [&] { comm.all_reduce({f.data(), count, DataType::f32}, {f.data(), count, DataType::f32}, op); });
        clean(label_of("mixed all_reduce", spec, DataType::f64, op, count),
              [&] { comm.all_reduce({d.data(), count, DataType::f64}, {d.data(), count, DataType::f64}, op); });
      }
    }
  }
}

TEST_CASE("a bit flipped in a shared-memory slot or an MPI receive raises Corrupted on every rank, naming the call") {
  const int n = world_size();
  if (n < 2) return;
  struct SiteCase {
    const char* site_name;
    util::fault::Site site;
    std::string spec;
    bool every_collective;  // else all_reduce, reduce, all_gather and batches: rechd's broadcast makes no
                            // Transport receive, and a reduce_scatter run as an all-reduce may drop the
                            // flipped element with the blocks it does not keep (a correct result)
  };
  std::vector<SiteCase> sites = {{"mpi", util::fault::Site::mpi, "xring", true}};
  // On virtual nodes (STRATA_RANKS_PER_NODE) pscpu's plan passes no
  // shared-memory slot here (observed: nothing flipped); that run covers
  // MPI between the virtual nodes.
  if (!std::getenv("STRATA_RANKS_PER_NODE")) sites.push_back({"shm", util::fault::Site::shm, "pscpu", true});
  for (const char* spec : {"rechd", "tree"})
    if (registered(spec)) sites.push_back({"mpi", util::fault::Site::mpi, spec, false});
  for (const SiteCase& site : sites)
    for (const std::size_t count : {std::size_t{40}, std::size_t{40000}})
      for (const Faulted& f : faulted_calls(n - 1, count)) {
        if (!site.every_collective && (f.named == "broadcast" || f.named == "reduce_scatter")) continue;
        // A rank that passes the site in this call. Shared memory: a rank
        // stages data for others (a broadcast's root, a reduce's non-root,
        // anyone in the other collectives). MPI: a rank that receives (a
        // broadcast's non-root, a reduce's root).
        const int root = n - 1;
        const bool shm = site.site == util::fault::Site::shm;
        int victim = shm ? n - 1 : n / 2;
        if (f.named == "reduce") victim = shm ? 0 : root;
        if (f.named == "broadcast") victim = shm ? root : 0;
        flip_case(std::string(site.site_name) + " " + f.name + " count=" + std::to_string(count), site.spec,
                  site.site, f.bit, victim, f.named, f.call);
      }
}

TEST_CASE("the ranks must agree on verify") {
  const int rank = world_rank();
  Config config;
  config.verify = rank == 0 ? Verification::checksum : Verification::off;
  if (world_size() < 2 || std::getenv("STRATA_VERIFY")) return;
  std::string message;
  try {
    Communicator comm(MPI_COMM_WORLD, config);
  } catch (const InvalidArgument& e) {
    message = e.what();
  }
  CHECK_MESSAGE(message.find("integrity check is on at rank(s) 0 and off") != std::string::npos, message);
}

TEST_CASE("requests are verified too, with and without the progress thread") {
  const int n = world_size(), rank = world_rank();
  if (n < 2) return;
  constexpr std::size_t kCount = 40000;  // 160 KB: large enough for the progress thread
  for (const bool thread : {false, true}) {
    Config config = verifying("auto");
    config.progress_thread = thread;
    Communicator comm(MPI_COMM_WORLD, config);
    const std::string label = std::string("iall_reduce progress_thread=") + (thread ? "on" : "off");
    Buffer in(kCount, DataType::f32), want(kCount, DataType::f32);
    fill_expected(want.data(), kCount, DataType::f32, ReduceOp::sum, n);

    // Call 1: clean.
    fill_input(in.data(), kCount, DataType::f32, ReduceOp::sum, rank);
    clean(label + " (clean)", [&] { comm.iall_reduce(in.tensor(), in.tensor(), ReduceOp::sum).wait(); });
    expect_equal(label + " (clean)", in.data(), want.data(), kCount, DataType::f32);

    // Call 2: a bit flipped where the plan passes (shared memory on one
    // node, MPI receives across virtual nodes), raised by wait().
    const bool virtual_nodes = std::getenv("STRATA_RANKS_PER_NODE") != nullptr;
    const std::uint64_t flips_before = util::fault::flips();
    util::fault::arm(virtual_nodes ? util::fault::Site::mpi : util::fault::Site::shm, 2, n - 1, 30);
    fill_input(in.data(), kCount, DataType::f32, ReduceOp::sum, rank);
    const Outcome outcome = run_faulted([&] { comm.iall_reduce(in.tensor(), in.tensor(), ReduceOp::sum).wait(); });
    util::fault::disarm();
    const bool any_flipped = !all_ranks(MPI_COMM_WORLD, util::fault::flips() == flips_before);
    CHECK_MESSAGE(any_flipped, label << ": the plan passed no fault site (nothing flipped)");
    CHECK_MESSAGE(outcome.corrupted, label << ": no Corrupted on rank " << rank << " " << outcome.message);
    CHECK_MESSAGE(outcome.message.find("all_reduce #2") != std::string::npos, label << ": " << outcome.message);

    // Call 3: exact again.
    fill_input(in.data(), kCount, DataType::f32, ReduceOp::sum, rank);
    clean(label + " (after)", [&] { comm.iall_reduce(in.tensor(), in.tensor(), ReduceOp::sum).wait(); });
    expect_equal(label + " (after)", in.data(), want.data(), kCount, DataType::f32);
  }
}
