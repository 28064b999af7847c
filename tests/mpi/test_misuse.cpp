// Misuse: ranks that disagree on a call. The last rank deviates (count+1,
// count/2, dtype, op, root, collective kind, small calls that the check
// across nodes carries, count 0, a count that takes
// the shared-memory direct path against one that does not, roots of large
// direct reduces and broadcasts, a batch with another tensor list, the
// implementation hint, the communicator's chunk_bytes); every rank must raise Mismatch naming the differing field,
// with and without a timeout, for every host algorithm (and, registered
// with STRATA_RANKS_PER_NODE, a hierarchical spec); then a correct call on
// the same communicator must succeed with the right result, which shows
// that nothing of the bad call was sent.
#include <doctest/doctest.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "harness.hpp"
#include "specs.hpp"
#include "strata/strata.hpp"

using namespace strata;
using namespace strata::test;

namespace {

constexpr std::size_t kCount = 1000;

struct Misuse {
  const char* name;
  const char* field;  // what the Mismatch message must name
  // Runs the call; `deviant` is true on the rank that does it differently.
  std::function<void(Communicator&, bool deviant, const CommunicationOptions&)> call;
};

Tensor f32(std::vector<float>& v, std::size_t count) { return {v.data(), count, DataType::f32}; }

const std::vector<Misuse>& cases() {
  static const std::vector<Misuse> list = {
      {"count+1", "count",
       [](Communicator& c, bool deviant, const CommunicationOptions& o) {
         std::vector<float> v(kCount + 1, 1.0f);
         c.all_reduce(f32(v, kCount + deviant), f32(v, kCount + deviant), ReduceOp::sum, o);
       }},
      {"count/2", "count",
       [](Communicator& c, bool deviant, const CommunicationOptions& o) {
         std::vector<float> v(kCount, 1.0f);
         const std::size_t n = deviant ? kCount / 2 : kCount;
         c.all_reduce(f32(v, n), f32(v, n), ReduceOp::sum, o);
       }},
      // Sizes whose shared-memory slots differ (shm_steps.hpp, RoundData):
      // each side looks for the other's digest in its own slot.
      {"slot sizes", "count",
       [](Communicator& c, bool deviant, const CommunicationOptions& o) {
         std::vector<float> v(3 * kCount, 1.0f);
         const std::size_t n = deviant ? 3 * kCount : kCount;
         c.all_reduce(f32(v, n), f32(v, n), ReduceOp::sum, o);
       }},
      {"reduce slot sizes", "count",
       [](Communicator& c, bool deviant, const CommunicationOptions& o) {
         std::vector<float> v(3 * kCount, 1.0f), out(3 * kCount);
         const std::size_t n = deviant ? 3 * kCount : kCount;
         c.reduce(f32(v, n), f32(out, n), ReduceOp::sum, 0, o);
       }},
      {"broadcast slot sizes", "count",
       [](Communicator& c, bool deviant, const CommunicationOptions& o) {
         std::vector<float> v(3 * kCount, 1.0f);
         c.broadcast(f32(v, deviant ? 3 * kCount : kCount), 0, o);
       }},
      {"large count+1", "count",  // the shared-memory all-reduce's multi-round path
       [](Communicator& c, bool deviant, const CommunicationOptions& o) {
         std::vector<float> v((1 << 20) + 1, 1.0f);
         const std::size_t n = (1 << 20) + deviant;
         c.all_reduce(f32(v, n), f32(v, n), ReduceOp::sum, o);
       }},
      {"direct vs rounds", "count",  // one side above the direct path's threshold, one in a single round
       [](Communicator& c, bool deviant, const CommunicationOptions& o) {
         std::vector<float> v(1 << 18, 1.0f);
         const std::size_t n = deviant ? kCount : v.size();
         c.all_reduce(f32(v, n), f32(v, n), ReduceOp::sum, o);
       }},
      {"large root", "root",  // the direct reduce
       [](Communicator& c, bool deviant, const CommunicationOptions& o) {
         std::vector<float> v(1 << 18, 1.0f), out(1 << 18);
         c.reduce(f32(v, v.size()), f32(out, out.size()), ReduceOp::sum, deviant ? 1 : 0, o);
       }},
      {"large broadcast root", "root",  // the direct broadcast
       [](Communicator& c, bool deviant, const CommunicationOptions& o) {
         std::vector<float> v(1 << 18, 1.0f);
         c.broadcast(f32(v, v.size()), deviant ? 1 : 0, o);
       }},
      // Small enough for the call check across nodes to carry the data
      // (exec/check_record.hpp): every rank must still learn of it.
      {"carried count+1", "count",
       [](Communicator& c, bool deviant, const CommunicationOptions& o) {
         std::vector<float> v(11, 1.0f);
         c.all_reduce(f32(v, 10 + deviant), f32(v, 10 + deviant), ReduceOp::sum, o);
       }},
      {"carried op", "op",
       [](Communicator& c, bool deviant, const CommunicationOptions& o) {
         std::vector<float> v(10, 1.0f);
         c.all_reduce(f32(v, 10), f32(v, 10), deviant ? ReduceOp::max : ReduceOp::sum, o);
       }},
      {"carried dtype", "dtype",  // the same bytes, another type
       [](Communicator& c, bool deviant, const CommunicationOptions& o) {
         std::vector<float> v(10, 1.0f);
         const Tensor t{v.data(), 10, deviant ? DataType::i32 : DataType::f32};
         c.all_reduce(t, t, ReduceOp::sum, o);
       }},
      {"carried against not", "count",  // 40 bytes against 4000
       [](Communicator& c, bool deviant, const CommunicationOptions& o) {
         std::vector<float> v(kCount, 1.0f);
         const std::size_t n = deviant ? 10 : kCount;
         c.all_reduce(f32(v, n), f32(v, n), ReduceOp::sum, o);
       }},
      {"carried root", "root",
       [](Communicator& c, bool deviant, const CommunicationOptions& o) {
         std::vector<float> v(10, 1.0f), out(10);
         c.reduce(f32(v, 10), f32(out, 10), ReduceOp::sum, deviant ? 1 : 0, o);
       }},
      {"carried broadcast root", "root",
       [](Communicator& c, bool deviant, const CommunicationOptions& o) {
         std::vector<float> v(10, 1.0f);
         c.broadcast(f32(v, 10), deviant ? 1 : 0, o);
       }},
      {"carried broadcast against reduce", "collective",
       [](Communicator& c, bool deviant, const CommunicationOptions& o) {
         std::vector<float> v(10, 1.0f), out(10);
         if (deviant)
           c.broadcast(f32(v, 10), 0, o);
         else
           c.reduce(f32(v, 10), f32(out, 10), ReduceOp::sum, 0, o);
       }},
      {"count 0", "count",
       [](Communicator& c, bool deviant, const CommunicationOptions& o) {
         std::vector<float> v(kCount, 1.0f);
         const std::size_t n = deviant ? 0 : kCount;
         c.all_reduce(f32(v, n), f32(v, n), ReduceOp::sum, o);
       }},
      {"dtype", "dtype",
       [](Communicator& c, bool deviant, const CommunicationOptions& o) {
         std::vector<double> v(kCount, 1.0);
         const Tensor t{v.data(), kCount, deviant ? DataType::f64 : DataType::i64};
         c.all_reduce(t, t, ReduceOp::sum, o);
       }},
      {"op", "op",
       [](Communicator& c, bool deviant, const CommunicationOptions& o) {
         std::vector<float> v(kCount, 1.0f);
         c.all_reduce(f32(v, kCount), f32(v, kCount), deviant ? ReduceOp::max : ReduceOp::sum, o);
       }},
      {"root", "root",
       [](Communicator& c, bool deviant, const CommunicationOptions& o) {
         std::vector<float> v(kCount, 1.0f), out(kCount);
         c.reduce(f32(v, kCount), f32(out, kCount), ReduceOp::sum, deviant ? 1 : 0, o);
       }},
      {"broadcast root", "root",
       [](Communicator& c, bool deviant, const CommunicationOptions& o) {
         std::vector<float> v(kCount, 1.0f);
         c.broadcast(f32(v, kCount), deviant ? 1 : 0, o);
       }},
      {"collective kind", "collective",
       [](Communicator& c, bool deviant, const CommunicationOptions& o) {
         std::vector<float> v(kCount, 1.0f);
         if (deviant)
           c.broadcast(f32(v, kCount), 0, o);
         else
           c.all_reduce(f32(v, kCount), f32(v, kCount), ReduceOp::sum, o);
       }},
      {"batch tensor list", "batch layout",
       [](Communicator& c, bool deviant, const CommunicationOptions& o) {
         std::vector<float> a(300, 1.0f), b(700, 1.0f), extra(5, 1.0f);
         std::vector<Tensor> tensors = {f32(a, a.size()), f32(b, b.size())};
         if (deviant) tensors.push_back(f32(extra, extra.size()));
         c.batch_all_reduce(tensors, ReduceOp::sum, o);
       }},
      {"implementation", "implementation",  // ring picks xring whatever the spec says
       [](Communicator& c, bool deviant, const CommunicationOptions& o) {
         std::vector<float> v(1 << 18, 1.0f);
         CommunicationOptions mine = o;
         if (deviant) mine.implementation = Implementation::ring;
         c.all_reduce(f32(v, v.size()), f32(v, v.size()), ReduceOp::sum, mine);
       }},
      {"batch implementation", "implementation",
       [](Communicator& c, bool deviant, const CommunicationOptions& o) {
         std::vector<float> a(300, 1.0f), b(1 << 18, 1.0f);
         CommunicationOptions mine = o;
         if (deviant) mine.implementation = Implementation::ring;
         std::vector<Tensor> tensors = {f32(a, a.size()), f32(b, b.size())};
         c.batch_all_reduce(tensors, ReduceOp::sum, mine);
       }},
      {"all_reduce vs batch", "collective",
       [](Communicator& c, bool deviant, const CommunicationOptions& o) {
         std::vector<float> a(kCount, 1.0f);
         std::vector<Tensor> tensors = {f32(a, kCount)};
         if (deviant)
           c.batch_all_reduce(tensors, ReduceOp::sum, o);
         else
           c.all_reduce(tensors[0], tensors[0], ReduceOp::sum, o);
       }},
  };
  return list;
}

// Every rank raises Mismatch naming `field`; then the communicator works.
void check_case(Communicator& comm, const Misuse& misuse, const CommunicationOptions& options,
                const std::string& spec) {
  const bool deviant = comm.rank() == comm.size() - 1;
  std::string message;
  bool mismatch = false;
  try {
    misuse.call(comm, deviant, options);
    message = "no exception";
  } catch (const Mismatch& e) {
    mismatch = true;
    message = e.what();
  } catch (const std::exception& e) {
    message = std::string("wrong exception: ") + e.what();
  }
  CAPTURE(spec);
  CAPTURE(misuse.name);
  CHECK_MESSAGE(mismatch, "expected Mismatch, got " << message);
  CHECK_MESSAGE(message.find(misuse.field) != std::string::npos, "Mismatch does not name '" << misuse.field
                                                                                             << "': " << message);
  CHECK_MESSAGE(message.find(std::to_string(comm.size() - 1)) != std::string::npos,
                "Mismatch does not name the deviating rank: " << message);
  CHECK_FALSE(comm.broken());
  // A correct call on the same communicator: exact result on every rank.
  std::vector<double> x(2049, 1.0 + comm.rank());
  comm.all_reduce({x.data(), x.size(), DataType::f64}, {x.data(), x.size(), DataType::f64}, ReduceOp::sum, options);
  const double n = comm.size();
  CHECK(x.front() == n * (n + 1) / 2);
  CHECK(x.back() == n * (n + 1) / 2);
}

std::vector<std::string> specs_under_test() {
  // With STRATA_RANKS_PER_NODE the layout has several nodes: the
  // hierarchical default and an explicit hierarchical spec.
  if (std::getenv("STRATA_RANKS_PER_NODE")) return {"auto", "mpi", "pscpu/xring", "tree/rechd"};
  std::vector<std::string> specs = {"auto"};
  for (const std::string& name : algorithm_names()) specs.push_back(name);
  return specs;
}

}  // namespace

TEST_CASE("ranks that disagree on a call all raise Mismatch, and the communicator stays usable") {
  if (world_size() < 2) return;  // one rank cannot disagree with itself
  for (const std::string& spec : specs_under_test())
    for (const double timeout : {0.0, 20.0}) {
      Communicator comm(MPI_COMM_WORLD, Config{.all_reduce_spec = spec});
      for (const Misuse& misuse : cases()) check_case(comm, misuse, {.timeout_seconds = timeout}, spec);
    }
}

namespace {

// One rank passes arguments validation rejects. It raises InvalidArgument;
// the call is still collective, so every other rank raises Mismatch naming
// it (instead of waiting for data that never comes); the ranks stay in
// step, so the next call works.
const std::vector<Misuse>& invalid_cases() {
  static const std::vector<Misuse> list = {
      {"reduce root out of range", "invalid",
       [](Communicator& c, bool deviant, const CommunicationOptions& o) {
         std::vector<float> v(kCount, 1.0f), out(kCount);
         c.reduce(f32(v, kCount), f32(out, kCount), ReduceOp::sum, deviant ? c.size() + 5 : 0, o);
       }},
      {"broadcast root -1", "invalid",
       [](Communicator& c, bool deviant, const CommunicationOptions& o) {
         std::vector<float> v(kCount, 1.0f);
         c.broadcast(f32(v, kCount), deviant ? -1 : 0, o);
       }},
      {"null data", "invalid",
       [](Communicator& c, bool deviant, const CommunicationOptions& o) {
         std::vector<float> v(kCount, 1.0f);
         const Tensor t{deviant ? nullptr : v.data(), kCount, DataType::f32};
         c.all_reduce(t, t, ReduceOp::sum, o);
       }},
      {"large null data", "invalid",  // the others on the direct path
       [](Communicator& c, bool deviant, const CommunicationOptions& o) {
         std::vector<float> v(1 << 18, 1.0f);
         const Tensor t{deviant ? nullptr : v.data(), v.size(), DataType::f32};
         c.all_reduce(t, t, ReduceOp::sum, o);
       }},
      {"op out of range", "invalid",
       [](Communicator& c, bool deviant, const CommunicationOptions& o) {
         std::vector<float> v(kCount, 1.0f);
         c.all_reduce(f32(v, kCount), f32(v, kCount), deviant ? ReduceOp(42) : ReduceOp::sum, o);
       }},
      {"implementation nccl on host memory", "invalid",
       [](Communicator& c, bool deviant, const CommunicationOptions& o) {
         std::vector<float> v(kCount, 1.0f);
         CommunicationOptions mine = o;
         if (deviant) mine.implementation = Implementation::nccl;
         c.all_reduce(f32(v, kCount), f32(v, kCount), ReduceOp::sum, mine);
       }},
      {"batch with bad packing", "invalid",
       [](Communicator& c, bool deviant, const CommunicationOptions& o) {
         std::vector<float> a(300, 1.0f), b(700, 1.0f);
         std::vector<Tensor> tensors = {f32(a, a.size()), f32(b, b.size())};
         c.batch_all_reduce(tensors, ReduceOp::sum, PackingOptions{.num_packs = deviant ? -3 : 1}, o);
       }},
      {"facade destination out of range", "invalid",
       [](Communicator& c, bool deviant, const CommunicationOptions& o) {
         std::vector<float> a(300, 1.0f);
         ReductionToOneDevice facade(c);
         facade.reduce(ReduceOp::sum, {f32(a, a.size())}, Destination::rank(deviant ? c.size() : 0), o);
       }},
  };
  return list;
}

void check_invalid_case(Communicator& comm, const Misuse& misuse, const CommunicationOptions& options,
                        const std::string& spec) {
  const bool deviant = comm.rank() == comm.size() - 1;
  std::string outcome = "no exception", message;
  try {
    misuse.call(comm, deviant, options);
  } catch (const InvalidArgument& e) {
    outcome = "InvalidArgument", message = e.what();
  } catch (const Mismatch& e) {
    outcome = "Mismatch", message = e.what();
  } catch (const std::exception& e) {
    outcome = std::string("wrong exception: ") + e.what();
  }
  CAPTURE(spec);
  CAPTURE(misuse.name);
  CAPTURE(message);
  CHECK(outcome == (deviant ? "InvalidArgument" : "Mismatch"));
  if (!deviant)
    CHECK_MESSAGE(message.find("invalid (InvalidArgument there) on rank " + std::to_string(comm.size() - 1)) !=
                      std::string::npos,
                  "Mismatch does not name the rank with invalid arguments");
  CHECK_FALSE(comm.broken());
  std::vector<double> x(2049, 1.0 + comm.rank());
  comm.all_reduce({x.data(), x.size(), DataType::f64}, {x.data(), x.size(), DataType::f64}, ReduceOp::sum, options);
  const double n = comm.size();
  CHECK(x.front() == n * (n + 1) / 2);
}

}  // namespace

TEST_CASE("one rank with invalid arguments raises InvalidArgument, every other rank Mismatch, nobody waits") {
  if (world_size() < 2) return;
  for (const std::string& spec : specs_under_test())
    for (const double timeout : {0.0, 20.0}) {
      Communicator comm(MPI_COMM_WORLD, Config{.all_reduce_spec = spec});
      for (const Misuse& misuse : invalid_cases()) check_invalid_case(comm, misuse, {.timeout_seconds = timeout}, spec);
    }
}

TEST_CASE("ranks whose communicators cut the ring differently (Config::chunk_bytes) all raise Mismatch") {
  if (world_size() < 2) return;
  for (const std::string& spec : specs_under_test()) {
    const bool deviant = world_rank() == world_size() - 1;
    Communicator comm(MPI_COMM_WORLD, Config{.all_reduce_spec = spec, .chunk_bytes = deviant ? 4096u : 0u});
    const Misuse same_call = {"chunk_bytes", "chunk_bytes",
                              [](Communicator& c, bool, const CommunicationOptions& o) {
                                std::vector<float> v(1 << 18, 1.0f);
                                c.all_reduce(f32(v, v.size()), f32(v, v.size()), ReduceOp::sum, o);
                              }};
    // The follow-up call of check_case runs too, and must mismatch as well:
    // the communicators still differ. So check the Mismatch alone here.
    std::string message = "no exception";
    try {
      same_call.call(comm, deviant, {.timeout_seconds = 20});
    } catch (const Mismatch& e) {
      message = e.what();
    } catch (const std::exception& e) {
      message = std::string("wrong exception: ") + e.what();
    }
    CAPTURE(spec);
    CHECK_MESSAGE(message.find("config.chunk_bytes: 4096 on rank " + std::to_string(world_size() - 1)) !=
                      std::string::npos,
                  message);
    CHECK_FALSE(comm.broken());
  }
}

TEST_CASE("ranks that disagree on checking calls (Config::check_calls) all raise InvalidArgument at construction") {
  if (world_size() < 2) return;
  // A checking rank sends a fingerprint an unchecking rank never expects:
  // such a communicator must not be built at all.
  Config config;
  config.check_calls = world_rank() != 0;
  std::string message = "no exception";
  try {
    Communicator comm(MPI_COMM_WORLD, config);
  } catch (const InvalidArgument& e) {
    message = e.what();
  } catch (const std::exception& e) {
    message = std::string("wrong exception: ") + e.what();
  }
  CHECK_MESSAGE(message.find("off at rank(s) 0") != std::string::npos, message);
  // Nothing is left half-built: a communicator with one setting works.
  Communicator comm(MPI_COMM_WORLD);
  std::vector<float> v(kCount, 1.0f);
  comm.all_reduce(f32(v, kCount), f32(v, kCount), ReduceOp::sum);
  CHECK(v[0] == float(comm.size()));
}

TEST_CASE("with the check off (Config::check_calls = false), agreeing calls still run") {
  Config config;
  config.check_calls = false;
  Communicator comm(MPI_COMM_WORLD, config);
  std::vector<float> v(kCount, 1.0f);
  comm.all_reduce(f32(v, kCount), f32(v, kCount), ReduceOp::sum);
  CHECK(v[0] == float(comm.size()));
}

TEST_CASE("a batch's Mismatch names the batch call (batch_all_reduce, batch_reduce), not all_reduce") {
  if (world_size() < 2) return;
  for (const std::string& spec : specs_under_test()) {
    CAPTURE(spec);
    Communicator comm(MPI_COMM_WORLD, Config{.all_reduce_spec = spec});
    const bool deviant = comm.rank() == comm.size() - 1;
    // Runs `call` (call number `number` on this communicator) and checks the
    // error names `expected` with that number.
    auto check_names = [&](const char* what, std::uint64_t number, const std::string& expected,
                           const std::function<void()>& call) {
      std::string message = "no exception";
      try {
        call();
      } catch (const Error& e) {
        message = e.what();
      }
      CAPTURE(what);
      const std::string named = expected + " #" + std::to_string(number) + " on rank " + std::to_string(comm.rank());
      CHECK_MESSAGE(message.find(named) != std::string::npos, "expected '" << named << "' in: " << message);
    };
    std::vector<float> a(300, 1.0f), b(700, 1.0f), extra(5, 1.0f);
    check_names("batch tensor list", 1, "batch_all_reduce", [&] {
      std::vector<Tensor> tensors = {f32(a, a.size()), f32(b, b.size())};
      if (deviant) tensors.push_back(f32(extra, extra.size()));
      comm.batch_all_reduce(tensors, ReduceOp::sum);
    });
    // One rank's batch is invalid: the others' Mismatch names the batch.
    if (!deviant)
      check_names("batch with bad packing", 2, "batch_all_reduce", [&] {
        std::vector<Tensor> tensors = {f32(a, a.size()), f32(b, b.size())};
        comm.batch_all_reduce(tensors, ReduceOp::sum, PackingOptions{.num_packs = 1});
      });
    else
      try {
        std::vector<Tensor> tensors = {f32(a, a.size()), f32(b, b.size())};
        comm.batch_all_reduce(tensors, ReduceOp::sum, PackingOptions{.num_packs = -3});
      } catch (const Error&) {
      }
    check_names("facade reduce with another destination", 3, "batch_reduce", [&] {
      ReductionToOneDevice facade(comm);
      facade.reduce(ReduceOp::sum, {f32(a, a.size())}, Destination::rank(deviant ? 1 : 0));
    });
  }
}
