// The TensorFlow-named facades (include/strata/cross_device_ops.hpp) under
// mpirun: NcclAllReduce, MultiWorkerAllReduce and ReductionToOneDevice with
// reduce / batch_reduce / broadcast, per-replica values (several host
// tensors per rank), destinations (all ranks or one), and
// CommunicationOptions honoured by every entry point.
//
// Inputs are small integers (|v| <= 6), exact in every dtype, so sums, min
// and max are exact; mean is compared with one rounding of the exact
// quotient (integers: truncated toward zero).
#include <doctest/doctest.h>
#include <mpi.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "harness.hpp"
#include "strata/spec.hpp"
#include "reference.hpp"
#include "strata/communicator.hpp"
#include "strata/cross_device_ops.hpp"
#include "strata/errors.hpp"

using namespace strata;
using strata::test::element_value;
using strata::test::store_value;

namespace {

int rank() { return strata::test::world_rank(); }
int nranks() { return strata::test::world_size(); }

bool is_float(DataType d) {
  return d == DataType::f32 || d == DataType::f64 || d == DataType::f16 || d == DataType::bf16;
}
bool is_unsigned(DataType d) { return d == DataType::u8 || d == DataType::u32 || d == DataType::u64; }

// Input element i of replica q on rank r for the value tagged `salt`.
double input(DataType d, int salt, int r, int q, std::size_t i) {
  const double v = static_cast<double>((r * 7 + q * 3 + static_cast<int>(i % 1000) * 5 + salt * 11) % 13) - 6;
  return is_unsigned(d) ? v + 6 : v;
}

// One PerReplica value with its own storage.
struct Value {
  DataType dtype = DataType::f32;
  std::size_t count = 0;
  int salt = 0;
  std::vector<std::vector<std::byte>> replicas;

  Value(DataType d, std::size_t n, int copies, int tag, int owner = rank()) : dtype(d), count(n), salt(tag) {
    for (int q = 0; q < copies; ++q) {
      replicas.emplace_back(std::max<std::size_t>(1, n * dtype_size(d)));
      for (std::size_t i = 0; i < n; ++i) store_value(replicas.back().data(), i, d, input(d, tag, owner, q, i));
    }
  }
  PerReplica view() {
    PerReplica out;
    for (auto& r : replicas) out.push_back(Tensor{r.data(), count, dtype});
    return out;
  }
  int copies() const { return static_cast<int>(replicas.size()); }
};

double expected(ReduceOp op, const Value& v, std::size_t i) {
  const int replicas = v.copies();
  double acc = input(v.dtype, v.salt, 0, 0, i);
  for (int r = 0; r < nranks(); ++r)
    for (int q = 0; q < replicas; ++q) {
      if (r == 0 && q == 0) continue;
      const double x = input(v.dtype, v.salt, r, q, i);
      if (op == ReduceOp::min) acc = std::min(acc, x);
      else if (op == ReduceOp::max) acc = std::max(acc, x);
      else acc += x;
    }
  if (op == ReduceOp::mean) {
    acc /= nranks() * replicas;
    if (!is_float(v.dtype)) acc = std::trunc(acc);
  }
  return acc;
}

// Empty if every replica holds op's result, else the first difference.
std::string check_reduced(ReduceOp op, const Value& v) {
  const double eps = v.dtype == DataType::bf16 ? 0x1p-8 : v.dtype == DataType::f16 ? 0x1p-11 : 0x1p-23;
  for (int q = 0; q < v.copies(); ++q)
    for (std::size_t i = 0; i < v.count; ++i) {
      const double got = element_value(v.replicas[static_cast<std::size_t>(q)].data(), i, v.dtype);
      const double want = expected(op, v, i);
      const double tolerance = op == ReduceOp::mean && is_float(v.dtype) ? eps * std::fabs(want) : 0;
      if (std::fabs(got - want) > tolerance)
        return std::string(to_string(v.dtype)) + " replica " + std::to_string(q) + " element " + std::to_string(i) +
               ": got " + std::to_string(got) + ", want " + std::to_string(want);
    }
  return {};
}

// Empty if every replica still holds this rank's input.
std::string check_untouched(const Value& v) {
  const Value fresh(v.dtype, v.count, v.copies(), v.salt);
  for (int q = 0; q < v.copies(); ++q)
    if (std::memcmp(v.replicas[static_cast<std::size_t>(q)].data(), fresh.replicas[static_cast<std::size_t>(q)].data(),
                    v.count * dtype_size(v.dtype)) != 0)
      return std::string(to_string(v.dtype)) + " replica " + std::to_string(q) + " was changed on a non-destination";
  return {};
}

// Empty if every replica holds `source`'s replica 0.
std::string check_broadcast(const Value& v, int source) {
  const Value from(v.dtype, v.count, 1, v.salt, source);
  for (int q = 0; q < v.copies(); ++q)
    if (std::memcmp(v.replicas[static_cast<std::size_t>(q)].data(), from.replicas[0].data(),
                    v.count * dtype_size(v.dtype)) != 0)
      return "replica " + std::to_string(q) + " does not hold rank " + std::to_string(source) + "'s replica 0";
  return {};
}

// The message of the InvalidArgument `fn` throws ("" and a failed check if none).
std::string invalid_argument_from(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const InvalidArgument& e) {
    return e.what();
  } catch (const std::exception& e) {
    FAIL_CHECK("threw the wrong exception type: " << e.what());
    return {};
  }
  FAIL_CHECK("expected InvalidArgument, nothing was thrown");
  return {};
}

void check_names(const std::string& message, std::initializer_list<std::string> fragments) {
  for (const std::string& f : fragments)
    CHECK_MESSAGE(message.find(f) != std::string::npos, "message '" << message << "' should contain '" << f << "'");
}

bool have(const char* algorithm) {
  for (const AlgorithmInfo& known : registered_algorithms())
    if (known.name == algorithm) return true;
  return false;
}

// The facades under test, with their replica counts.
struct Facade {
  std::string name;
  std::unique_ptr<CrossDeviceOps> ops;
  int replicas;
};

std::vector<Facade> all_facades(Communicator& comm) {
  std::vector<Facade> out;
  out.push_back({"NcclAllReduce(1)", std::make_unique<NcclAllReduce>(comm, 1), 1});
  out.push_back({"ReductionToOneDevice", std::make_unique<ReductionToOneDevice>(comm), 1});
  out.push_back({"MultiWorkerAllReduce(1, xring, num_packs 2)", std::make_unique<MultiWorkerAllReduce>(comm, 1, "xring", 2), 1});
  out.push_back({"MultiWorkerAllReduce(1, mpi)", std::make_unique<MultiWorkerAllReduce>(comm, 1, "mpi"), 1});
  if (have("pscpu")) {
    out.push_back({"MultiWorkerAllReduce(1)", std::make_unique<MultiWorkerAllReduce>(comm, 1), 1});
    out.push_back({"MultiWorkerAllReduce(2)", std::make_unique<MultiWorkerAllReduce>(comm, 2), 2});
  }
  out.push_back({"MultiWorkerAllReduce(2, tree:1k:xring, agg 256/3)",
                 std::make_unique<MultiWorkerAllReduce>(comm, 2, "tree:1k:xring", 0, 256, 3), 2});
  return out;
}

}  // namespace

TEST_CASE("NcclAllReduce: num_packs = 1 reduces host tensors; num_packs = -1 is InvalidArgument") {
  Communicator comm(MPI_COMM_WORLD);
  NcclAllReduce ops(comm, 1);
  CHECK(ops.all_reduce_spec() == "nccl");
  NcclAllReduce defaults(comm);
  for (ReduceOp op : {ReduceOp::sum, ReduceOp::mean, ReduceOp::max}) {
    Value a(DataType::f32, 1000, 1, 1), b(DataType::i32, 17, 1, 2), c(DataType::f64, 3, 1, 3);
    ops.reduce(op, a.view(), Destination::all_ranks());
    CHECK_MESSAGE(check_reduced(op, a).empty(), check_reduced(op, a));
    const std::vector<std::pair<PerReplica, Destination>> pairs = {{b.view(), Destination::all_ranks()},
                                                                   {c.view(), Destination::all_ranks()}};
    defaults.batch_reduce(op, pairs);
    CHECK_MESSAGE(check_reduced(op, b).empty(), check_reduced(op, b));
    CHECK_MESSAGE(check_reduced(op, c).empty(), check_reduced(op, c));
  }
  check_names(invalid_argument_from([&] { NcclAllReduce bad(comm, -1); }), {"num_packs", "-1"});
  CHECK_NOTHROW(NcclAllReduce(comm, 0));
  CHECK_NOTHROW(NcclAllReduce(comm, 8));
}

TEST_CASE("MultiWorkerAllReduce: 1 and 2 replicas per rank, reduced across all replicas of all ranks") {
  if (!have("pscpu")) {
    MESSAGE("pscpu not registered yet: the default spec 'pscpu/pscpu#2' cannot be built; skipped");
    return;
  }
  Communicator comm(MPI_COMM_WORLD);
  strata::test::SameBitsLog same_bits;
  for (int gpus : {1, 2}) {
    CAPTURE(gpus);
    MultiWorkerAllReduce ops(comm, gpus);
    CHECK(ops.all_reduce_spec() == "pscpu/pscpu#2");
    for (ReduceOp op : {ReduceOp::sum, ReduceOp::mean, ReduceOp::min, ReduceOp::max}) {
      CAPTURE(op);
      for (DataType d : {DataType::f32, DataType::i32, DataType::bf16, DataType::u8, DataType::i64}) {
        CAPTURE(d);
        Value v(d, d == DataType::f32 ? 70001 : 37, gpus, static_cast<int>(d));
        ops.reduce(op, v.view(), Destination::all_ranks());
        const std::string why = check_reduced(op, v);
        CHECK_MESSAGE(why.empty(), why);
        for (auto& r : v.replicas) same_bits.add("gpus " + std::to_string(gpus), r.data(), v.count * dtype_size(d));
      }
    }
    // Packing options of the facade: num_packs and small-gradient aggregation.
    MultiWorkerAllReduce packed(comm, gpus, "pscpu/pscpu#2", 3);
    MultiWorkerAllReduce aggregated(comm, gpus, "xring", 0, 512, 2);
    for (CrossDeviceOps* facade : {static_cast<CrossDeviceOps*>(&packed), static_cast<CrossDeviceOps*>(&aggregated)}) {
      Value a(DataType::f32, 100, gpus, 1), b(DataType::i64, 1000, gpus, 2), c(DataType::f32, 5, gpus, 3),
          d(DataType::f32, 0, gpus, 4);
      const std::vector<std::pair<PerReplica, Destination>> pairs = {{a.view(), Destination::all_ranks()},
                                                                     {b.view(), Destination::all_ranks()},
                                                                     {c.view(), Destination::all_ranks()},
                                                                     {d.view(), Destination::all_ranks()}};
      facade->batch_reduce(ReduceOp::mean, pairs);
      for (const Value* v : {&a, &b, &c}) CHECK_MESSAGE(check_reduced(ReduceOp::mean, *v).empty(), check_reduced(ReduceOp::mean, *v));
    }
  }
  same_bits.check_same_on_all_ranks(MPI_COMM_WORLD);
}

TEST_CASE("MultiWorkerAllReduce: replica counts and construction arguments are validated") {
  Communicator comm(MPI_COMM_WORLD);
  const std::string spec = have("pscpu") ? "pscpu/pscpu#2" : "xring";
  MultiWorkerAllReduce ops(comm, 2, spec);
  Value one(DataType::f32, 4, 1, 0), three(DataType::f32, 4, 3, 0), two(DataType::f32, 4, 2, 0);
  for (Value* wrong : {&one, &three}) {
    CAPTURE(wrong->copies());
    const std::string count = std::to_string(wrong->copies());
    check_names(invalid_argument_from([&] { ops.reduce(ReduceOp::sum, wrong->view(), Destination::all_ranks()); }),
                {"num_gpus_per_worker = 2", count});
    const std::vector<std::pair<PerReplica, Destination>> pairs = {{two.view(), Destination::all_ranks()},
                                                                   {wrong->view(), Destination::all_ranks()}};
    check_names(invalid_argument_from([&] { ops.batch_reduce(ReduceOp::sum, pairs); }), {"pairs[1]", "num_gpus_per_worker"});
    check_names(invalid_argument_from([&] { ops.broadcast(wrong->view()); }), {"num_gpus_per_worker = 2"});
  }
  CHECK_MESSAGE(check_untouched(two).empty(), "a rejected batch must not have touched the valid value");
  // Replicas of one value must match; a value needs at least one replica.
  Value mixed(DataType::f32, 4, 2, 0);
  PerReplica shapes = mixed.view();
  shapes[1].count = 3;
  check_names(invalid_argument_from([&] { ops.reduce(ReduceOp::sum, shapes, Destination::all_ranks()); }), {"[1]", "replicas must match"});
  shapes = mixed.view();
  shapes[1].dtype = DataType::i32;
  check_names(invalid_argument_from([&] { ops.reduce(ReduceOp::sum, shapes, Destination::all_ranks()); }), {"i32", "f32"});
  ReductionToOneDevice any(comm);
  check_names(invalid_argument_from([&] { any.reduce(ReduceOp::sum, PerReplica{}, Destination::all_ranks()); }),
              {"no replicas"});
  // Construction.
  check_names(invalid_argument_from([&] { MultiWorkerAllReduce bad(comm, 0); }), {"num_gpus_per_worker", "0"});
  check_names(invalid_argument_from([&] { MultiWorkerAllReduce bad(comm, -3, "xring"); }), {"num_gpus_per_worker", "-3"});
  check_names(invalid_argument_from([&] { MultiWorkerAllReduce bad(comm, 1, "xring", -2); }), {"num_packs", "-2"});
  check_names(invalid_argument_from([&] { MultiWorkerAllReduce bad(comm, 1, "xring", 0, -1); }),
              {"agg_small_grads_max_bytes", "-1"});
  check_names(invalid_argument_from([&] { MultiWorkerAllReduce bad(comm, 1, "xring", 0, 10, -4); }),
              {"agg_small_grads_max_group", "-4"});
  check_names(invalid_argument_from([&] { MultiWorkerAllReduce bad(comm, 1, "pscpu/bogus"); }), {"bogus"});
  // After all those errors the communicator still works.
  Value after(DataType::i32, 9, 2, 5);
  ops.reduce(ReduceOp::sum, after.view(), Destination::all_ranks());
  CHECK_MESSAGE(check_reduced(ReduceOp::sum, after).empty(), check_reduced(ReduceOp::sum, after));
}

TEST_CASE("reduce to Destination::all_ranks() and to Destination::rank(r) for every r") {
  Communicator comm(MPI_COMM_WORLD);
  for (Facade& f : all_facades(comm)) {
    CAPTURE(f.name);
    for (ReduceOp op : {ReduceOp::sum, ReduceOp::mean, ReduceOp::min}) {
      CAPTURE(op);
      for (std::size_t count : {std::size_t{5}, std::size_t{70000}}) {
        CAPTURE(count);
        Value all(DataType::f32, count, f.replicas, 1);
        f.ops->reduce(op, all.view(), Destination::all_ranks());
        CHECK_MESSAGE(check_reduced(op, all).empty(), check_reduced(op, all));
        for (int root = 0; root < nranks(); ++root) {
          CAPTURE(root);
          Value v(DataType::i64, count, f.replicas, 2 + root), w(DataType::f16, count / 7, f.replicas, 9 + root);
          f.ops->reduce(op, v.view(), Destination::rank(root));
          f.ops->reduce(op, w.view(), Destination::rank(root));
          for (const Value* x : {&v, &w}) {
            const std::string why = rank() == root ? check_reduced(op, *x) : check_untouched(*x);
            CHECK_MESSAGE(why.empty(), why);
          }
        }
      }
    }
  }
}

TEST_CASE("batch_reduce: mixed destinations and dtypes, results in input order") {
  Communicator comm(MPI_COMM_WORLD);
  const int n = nranks();
  for (Facade& f : all_facades(comm)) {
    CAPTURE(f.name);
    for (ReduceOp op : {ReduceOp::sum, ReduceOp::mean, ReduceOp::max}) {
      CAPTURE(op);
      std::vector<Value> values;
      std::vector<Destination> where;
      auto add = [&](DataType d, std::size_t count, Destination dest) {
        values.emplace_back(d, count, f.replicas, static_cast<int>(values.size()));
        where.push_back(dest);
      };
      add(DataType::f32, 10, Destination::all_ranks());
      add(DataType::i64, 7, Destination::rank(n - 1));
      add(DataType::f64, 3, Destination::rank(0));
      add(DataType::u8, 33, Destination::all_ranks());
      add(DataType::bf16, 5, Destination::rank(1 % n));
      add(DataType::i32, 0, Destination::all_ranks());
      add(DataType::f16, 9, Destination::rank(0));
      add(DataType::u64, 4, Destination::all_ranks());
      add(DataType::f32, 20000, Destination::rank(n - 1));
      add(DataType::i8, 70, Destination::rank(0));
      add(DataType::u32, 2, Destination::all_ranks());
      std::vector<std::pair<PerReplica, Destination>> pairs;
      for (std::size_t k = 0; k < values.size(); ++k) pairs.emplace_back(values[k].view(), where[k]);
      f.ops->batch_reduce(op, pairs);
      for (std::size_t k = 0; k < values.size(); ++k) {
        CAPTURE(k);
        const bool lands = where[k].is_all_ranks() || where[k].root() == rank();
        const std::string why = lands ? check_reduced(op, values[k]) : check_untouched(values[k]);
        CHECK_MESSAGE(why.empty(), why);
      }
    }
    // An empty batch is a collective no-op.
    CHECK_NOTHROW(f.ops->batch_reduce(ReduceOp::sum, std::span<const std::pair<PerReplica, Destination>>{}));
  }
}

TEST_CASE("broadcast from every source rank, to all ranks and to each single destination rank") {
  Communicator comm(MPI_COMM_WORLD);
  for (Facade& f : all_facades(comm)) {
    CAPTURE(f.name);
    for (std::size_t count : {std::size_t{6}, std::size_t{100000}}) {
      CAPTURE(count);
      for (int source = 0; source < nranks(); ++source) {
        CAPTURE(source);
        Value everywhere(DataType::f32, count, f.replicas, 3);
        f.ops->broadcast(everywhere.view(), Destination::all_ranks(), source);
        CHECK_MESSAGE(check_broadcast(everywhere, source).empty(), check_broadcast(everywhere, source));
        for (int dest = 0; dest < nranks(); ++dest) {
          CAPTURE(dest);
          Value one(DataType::i32, count, f.replicas, 4 + dest);
          f.ops->broadcast(one.view(), Destination::rank(dest), source);
          const std::string why = rank() == dest ? check_broadcast(one, source) : check_untouched(one);
          CHECK_MESSAGE(why.empty(), why);
        }
      }
    }
    // Default arguments: all ranks, from rank 0.
    Value plain(DataType::u8, 11, f.replicas, 7);
    f.ops->broadcast(plain.view());
    CHECK_MESSAGE(check_broadcast(plain, 0).empty(), check_broadcast(plain, 0));
  }
}

TEST_CASE("CommunicationOptions are validated by reduce, batch_reduce and broadcast") {
  Communicator comm(MPI_COMM_WORLD);
  for (Facade& f : all_facades(comm)) {
    CAPTURE(f.name);
    struct Bad {
      CommunicationOptions options;
      std::vector<std::string> names;
    };
    CommunicationOptions negative_timeout, nan_timeout, negative_pack;
    negative_timeout.timeout_seconds = -1;
    nan_timeout.timeout_seconds = std::numeric_limits<double>::quiet_NaN();
    negative_pack.bytes_per_pack = -4096;
    const std::vector<Bad> bad = {{negative_timeout, {"timeout_seconds", "-1"}},
                                  {nan_timeout, {"timeout_seconds", "NaN"}},
                                  {negative_pack, {"bytes_per_pack", "-4096"}}};
    for (const Bad& b : bad) {
      CAPTURE(b.names.front());
      Value v(DataType::f32, 8, f.replicas, 1);
      const std::vector<std::pair<PerReplica, Destination>> pairs = {{v.view(), Destination::rank(0)}};
      for (const std::string& message :
           {invalid_argument_from([&] { f.ops->reduce(ReduceOp::sum, v.view(), Destination::all_ranks(), b.options); }),
            invalid_argument_from([&] { f.ops->reduce(ReduceOp::sum, v.view(), Destination::rank(0), b.options); }),
            invalid_argument_from([&] { f.ops->batch_reduce(ReduceOp::sum, pairs, b.options); }),
            invalid_argument_from([&] { f.ops->broadcast(v.view(), Destination::all_ranks(), 0, b.options); })})
        for (const std::string& name : b.names)
          CHECK_MESSAGE(message.find(name) != std::string::npos, "'" << message << "' should name " << name);
      CHECK_MESSAGE(check_untouched(v).empty(), check_untouched(v));
    }
  }
}

TEST_CASE("implementation = nccl on host tensors is InvalidArgument saying why; ring and a timeout work") {
  Communicator comm(MPI_COMM_WORLD);
  for (Facade& f : all_facades(comm)) {
    CAPTURE(f.name);
    CommunicationOptions nccl;
    nccl.implementation = Implementation::nccl;
    Value v(DataType::f32, 64, f.replicas, 1);
    const std::vector<std::pair<PerReplica, Destination>> pairs = {{v.view(), Destination::all_ranks()}};
    for (const std::string& message :
         {invalid_argument_from([&] { f.ops->reduce(ReduceOp::sum, v.view(), Destination::all_ranks(), nccl); }),
          invalid_argument_from([&] { f.ops->reduce(ReduceOp::sum, v.view(), Destination::rank(nranks() - 1), nccl); }),
          invalid_argument_from([&] { f.ops->batch_reduce(ReduceOp::sum, pairs, nccl); }),
          invalid_argument_from([&] { f.ops->broadcast(v.view(), Destination::all_ranks(), 0, nccl); })}) {
      check_names(message, {"nccl", "host memory"});
    }
    CHECK_MESSAGE(check_untouched(v).empty(), check_untouched(v));

    // ring (xring whatever the facade's spec) and bounded calls give the right results.
    CommunicationOptions ring;
    ring.implementation = Implementation::ring;
    CommunicationOptions bounded;
    bounded.timeout_seconds = 120;
    bounded.bytes_per_pack = 64;
    for (const CommunicationOptions& options : {ring, bounded}) {
      CAPTURE(static_cast<int>(options.implementation));
      Value a(DataType::f32, 1000, f.replicas, 2), b(DataType::i32, 30, f.replicas, 3), c(DataType::f64, 100, f.replicas, 4);
      f.ops->reduce(ReduceOp::sum, a.view(), Destination::all_ranks(), options);
      CHECK_MESSAGE(check_reduced(ReduceOp::sum, a).empty(), check_reduced(ReduceOp::sum, a));
      const std::vector<std::pair<PerReplica, Destination>> two = {{b.view(), Destination::rank(0)},
                                                                   {c.view(), Destination::all_ranks()}};
      f.ops->batch_reduce(ReduceOp::max, two, options);
      const std::string why_b = rank() == 0 ? check_reduced(ReduceOp::max, b) : check_untouched(b);
      CHECK_MESSAGE(why_b.empty(), why_b);
      CHECK_MESSAGE(check_reduced(ReduceOp::max, c).empty(), check_reduced(ReduceOp::max, c));
      Value d(DataType::u64, 500, f.replicas, 5);
      f.ops->broadcast(d.view(), Destination::all_ranks(), nranks() - 1, options);
      CHECK_MESSAGE(check_broadcast(d, nranks() - 1).empty(), check_broadcast(d, nranks() - 1));
    }
    CHECK_FALSE(comm.broken());
  }
}

TEST_CASE("destinations and broadcast sources outside the communicator are InvalidArgument") {
  Communicator comm(MPI_COMM_WORLD);
  ReductionToOneDevice ops(comm);
  Value v(DataType::f32, 8, 1, 1);
  const std::string n = std::to_string(nranks());
  check_names(invalid_argument_from([&] { ops.reduce(ReduceOp::sum, v.view(), Destination::rank(nranks())); }),
              {"destination", "rank " + n});
  const std::vector<std::pair<PerReplica, Destination>> pairs = {{v.view(), Destination::rank(nranks() + 3)}};
  check_names(invalid_argument_from([&] { ops.batch_reduce(ReduceOp::sum, pairs); }), {"pairs[0].destination"});
  check_names(invalid_argument_from([&] { ops.broadcast(v.view(), Destination::rank(nranks())); }), {"destinations"});
  check_names(invalid_argument_from([&] { ops.broadcast(v.view(), Destination::all_ranks(), nranks()); }), {"root", n});
  check_names(invalid_argument_from([&] { ops.broadcast(v.view(), Destination::all_ranks(), -1); }), {"root", "-1"});
  CHECK_MESSAGE(check_untouched(v).empty(), check_untouched(v));
}

// cross_device_ops.hpp: Destination::rank(root) "throws InvalidArgument at
// use if root is outside the communicator"; a negative root is treated as
// all_ranks() instead (Destination::is_all_ranks is root_ < 0, and
// validate_destination in lib/api/cross_device_ops.cpp skips all-ranks
// destinations), so the call silently all-reduces. Reported bug. Skipped
// rather than may_fail: the MPI harness fails the job on any failed
// assertion. Run it with --no-skip.
TEST_CASE("Destination::rank(-2) is InvalidArgument at use") {
  Communicator comm(MPI_COMM_WORLD);
  ReductionToOneDevice ops(comm);
  Value v(DataType::f32, 8, 1, 1);
  CHECK_FALSE(Destination::rank(-2).is_all_ranks());
  check_names(invalid_argument_from([&] { ops.reduce(ReduceOp::sum, v.view(), Destination::rank(-2)); }),
              {"destination", "-2"});
  check_names(invalid_argument_from([&] { ops.broadcast(v.view(), Destination::rank(-2)); }), {"destinations", "-2"});
  CHECK_MESSAGE(check_untouched(v).empty(), "a rejected call must not change the value");
}
