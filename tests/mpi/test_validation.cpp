// Bad input under MPI: every rank passes the same bad argument, every rank
// raises InvalidArgument naming the field and the value, and a valid call
// on the same communicator afterwards still succeeds and is correct, which
// shows that the bad call sent nothing (a stray message would be matched by
// the next call and corrupt or hang it).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <functional>
#include <initializer_list>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "check_throws.hpp"
#include "harness.hpp"
#include "specs.hpp"
#include "strata/strata.hpp"

using namespace strata;
using namespace strata::test;

namespace {

// Runs `bad` on every rank and checks the exception and its message there;
// then checks that all ranks agreed and that `comm` still works.
void expect_invalid_everywhere(Communicator& comm, const std::string& what, const std::function<void()>& bad,
                               std::initializer_list<std::string_view> fragments) {
  CAPTURE(what);
  const bool right_type = check_throws_naming<InvalidArgument>(bad, fragments);
  const std::vector<int> raised = ranks_where(MPI_COMM_WORLD, right_type);
  CHECK_MESSAGE(static_cast<int>(raised.size()) == world_size(),
                what << ": only " << raised.size() << " of " << world_size() << " ranks raised InvalidArgument");

  // The same communicator is still usable and in step.
  std::vector<int> v(5, comm.rank() + 1);
  comm.all_reduce({v.data(), v.size(), DataType::i32}, {v.data(), v.size(), DataType::i32}, ReduceOp::sum);
  const int n = comm.size();
  CHECK_MESSAGE(v[4] == n * (n + 1) / 2, what << ": the next valid all_reduce gave " << v[4]);
  CHECK_FALSE(comm.broken());
}

std::string pointer_text(const void* p) {
  char text[32];
  std::snprintf(text, sizeof text, "%p", p);
  return text;
}

}  // namespace

TEST_CASE("bad arguments raise InvalidArgument on every rank and send nothing") {
  const int n = world_size();
  for (const std::string& spec : all_reduce_specs()) {
    CAPTURE(spec);
    Communicator comm(MPI_COMM_WORLD, Config{.all_reduce_spec = spec});
    std::vector<float> a(16, 1.0f), b(16);
    const Tensor in{a.data(), 8, DataType::f32}, out{b.data(), 8, DataType::f32};
    const double nan = std::numeric_limits<double>::quiet_NaN();
    std::vector<float> c(16);  // a third buffer, for batches

    expect_invalid_everywhere(comm, "all_reduce null in.data", [&] {
      comm.all_reduce({nullptr, 5, DataType::f32}, out, ReduceOp::sum);
    }, {"in.data", "5"});
    expect_invalid_everywhere(comm, "all_reduce null out.data", [&] {
      comm.all_reduce(in, {nullptr, 8, DataType::f32}, ReduceOp::sum);
    }, {"out.data", "8"});
    expect_invalid_everywhere(comm, "reduce null in.data", [&] {
      comm.reduce({nullptr, 3, DataType::i8}, {b.data(), 3, DataType::i8}, ReduceOp::max, 0);
    }, {"in.data", "3"});
    expect_invalid_everywhere(comm, "broadcast null data", [&] {
      comm.broadcast({nullptr, 4, DataType::u64}, 0);
    }, {"buffer.data", "4"});
    expect_invalid_everywhere(comm, "batch null data", [&] {
      std::vector<Tensor> tensors = {{a.data(), 2, DataType::f32}, {nullptr, 6, DataType::f32}};
      comm.batch_all_reduce(tensors, ReduceOp::sum);
    }, {"tensors[1].data", "6"});

    expect_invalid_everywhere(comm, "reduce root = size", [&] { comm.reduce(in, out, ReduceOp::sum, n); },
                              {"root = " + std::to_string(n), std::to_string(n)});
    expect_invalid_everywhere(comm, "reduce root = -1", [&] { comm.reduce(in, out, ReduceOp::sum, -1); },
                              {"root = -1"});
    expect_invalid_everywhere(comm, "broadcast root = size + 3", [&] { comm.broadcast(in, n + 3); },
                              {"root = " + std::to_string(n + 3)});

    expect_invalid_everywhere(comm, "negative bytes_per_pack", [&] {
      std::vector<Tensor> tensors = {{a.data(), 4, DataType::f32}};
      comm.batch_all_reduce(tensors, ReduceOp::sum, {.bytes_per_pack = -4096});
    }, {"bytes_per_pack", "-4096"});
    expect_invalid_everywhere(comm, "negative bytes_per_pack on all_reduce", [&] {
      comm.all_reduce(in, out, ReduceOp::sum, {.bytes_per_pack = -1});
    }, {"bytes_per_pack", "-1"});
    expect_invalid_everywhere(comm, "negative timeout", [&] {
      comm.all_reduce(in, out, ReduceOp::sum, {.timeout_seconds = -2.5});
    }, {"timeout_seconds", "-2.5"});
    expect_invalid_everywhere(comm, "NaN timeout", [&] {
      comm.broadcast(in, 0, {.timeout_seconds = nan});
    }, {"timeout_seconds", "NaN"});
    expect_invalid_everywhere(comm, "infinite timeout", [&] {
      comm.reduce(in, out, ReduceOp::sum, 0, {.timeout_seconds = std::numeric_limits<double>::infinity()});
    }, {"timeout_seconds", "inf"});
    expect_invalid_everywhere(comm, "bad op", [&] {
      comm.all_reduce(in, out, static_cast<ReduceOp>(42));
    }, {"op", "42"});
    expect_invalid_everywhere(comm, "bad dtype", [&] {
      comm.all_reduce({a.data(), 2, static_cast<DataType>(77)}, {b.data(), 2, static_cast<DataType>(77)}, ReduceOp::sum);
    }, {"in.dtype", "77"});

    expect_invalid_everywhere(comm, "overlapping in/out", [&] {
      comm.all_reduce({a.data(), 8, DataType::f32}, {a.data() + 3, 8, DataType::f32}, ReduceOp::sum);
    }, {"in.data", "out.data", "overlap", pointer_text(a.data()), pointer_text(a.data() + 3)});
    expect_invalid_everywhere(comm, "overlapping in/out on reduce", [&] {
      comm.reduce({a.data() + 1, 8, DataType::f32}, {a.data(), 8, DataType::f32}, ReduceOp::sum, 0);
    }, {"overlap", pointer_text(a.data() + 1)});
    expect_invalid_everywhere(comm, "count mismatch", [&] {
      comm.all_reduce({a.data(), 8, DataType::f32}, {b.data(), 7, DataType::f32}, ReduceOp::sum);
    }, {"out.count = 7", "8"});

    // Sizes that cannot be a buffer: count x element size past any buffer,
    // PTRDIFF_MAX bytes on a real pointer (in place and not: it used to
    // pass and crash inside the shared-memory reduce-scatter), a buffer
    // that wraps the address space, and a batch whose total is too large.
    const std::size_t huge = (std::size_t{1} << 62) + 1;
    expect_invalid_everywhere(comm, "count x 8 bytes past any buffer", [&] {
      comm.all_reduce({a.data(), huge, DataType::f64}, {b.data(), huge, DataType::f64}, ReduceOp::sum);
    }, {"in.count", std::to_string(huge)});
    const std::size_t ptrdiff_max_bytes = SIZE_MAX / 2;  // u8 elements: PTRDIFF_MAX bytes
    expect_invalid_everywhere(comm, "PTRDIFF_MAX bytes in place", [&] {
      comm.all_reduce({a.data(), ptrdiff_max_bytes, DataType::u8}, {a.data(), ptrdiff_max_bytes, DataType::u8},
                      ReduceOp::sum);
    }, {"in.", std::to_string(ptrdiff_max_bytes), "cannot be a buffer"});
    expect_invalid_everywhere(comm, "PTRDIFF_MAX bytes reduced to a root", [&] {
      comm.reduce({a.data(), ptrdiff_max_bytes, DataType::u8}, {b.data(), ptrdiff_max_bytes, DataType::u8},
                  ReduceOp::sum, 0);
    }, {"in.", "cannot be a buffer"});
    expect_invalid_everywhere(comm, "PTRDIFF_MAX bytes broadcast", [&] {
      comm.broadcast({a.data(), ptrdiff_max_bytes, DataType::u8}, 0);
    }, {"buffer.", "cannot be a buffer"});
    expect_invalid_everywhere(comm, "buffer wrapping the address space", [&] {
      void* top = reinterpret_cast<void*>(UINTPTR_MAX - 63);
      comm.broadcast({top, 1024, DataType::u8}, 0);
    }, {"buffer.data", "cannot be a buffer"});
    expect_invalid_everywhere(comm, "batch total past any buffer", [&] {
      const std::size_t piece = std::size_t{1} << 54;  // 64 PiB of f32 each: fine alone, too large together
      std::vector<Tensor> tensors = {
          {a.data(), piece, DataType::f32}, {b.data(), piece, DataType::f32}, {c.data(), piece, DataType::f32}};
      comm.batch_all_reduce(tensors, ReduceOp::sum);
    }, {"tensors", "larger than any buffer"});
    // Element-misaligned pointers are refused (the kernels load whole elements).
    std::vector<double> d(8, 1.0);
    void* odd = reinterpret_cast<std::byte*>(d.data()) + 4;
    expect_invalid_everywhere(comm, "misaligned f64", [&] {
      comm.all_reduce({odd, 2, DataType::f64}, {odd, 2, DataType::f64}, ReduceOp::sum);
    }, {"in.data", "aligned to 8 bytes", "f64"});
    expect_invalid_everywhere(comm, "misaligned f16 in a batch", [&] {
      std::vector<Tensor> tensors = {{reinterpret_cast<std::byte*>(d.data()) + 1, 3, DataType::f16}};
      comm.batch_all_reduce(tensors, ReduceOp::sum);
    }, {"tensors[0].data", "aligned to 2 bytes"});
  }
}

TEST_CASE("a repeated call is checked like the first: the same bad arguments are refused every time") {
  // Valid arguments, once checked, are not checked again when a call repeats
  // them exactly (api/calls.cpp); arguments that failed are never kept, so
  // the same bad call made twice in a row is refused twice.
  Communicator comm(MPI_COMM_WORLD);
  const int n = world_size();
  std::vector<float> a(8, 1.0f), b(8);
  const Tensor in{a.data(), 8, DataType::f32}, out{b.data(), 8, DataType::f32};
  const CommunicationOptions bad_timeout{.timeout_seconds = -1};
  struct Bad {
    const char* what;
    std::function<void()> valid, bad;
  };
  const Bad cases[] = {
      {"all_reduce, timeout -1", [&] { comm.all_reduce(in, out, ReduceOp::sum); },
       [&] { comm.all_reduce(in, out, ReduceOp::sum, bad_timeout); }},
      {"reduce, timeout -1", [&] { comm.reduce(in, out, ReduceOp::sum, 0); },
       [&] { comm.reduce(in, out, ReduceOp::sum, 0, bad_timeout); }},
      {"broadcast, timeout -1", [&] { comm.broadcast(in, 0); }, [&] { comm.broadcast(in, 0, bad_timeout); }},
  };
  for (const Bad& c : cases) {
    CAPTURE(c.what);
    c.valid();  // kept
    for (int time = 0; time < 2; ++time) {
      CAPTURE(time);
      const bool refused = check_throws_naming<InvalidArgument>(c.bad, {"timeout_seconds"});
      CHECK(static_cast<int>(ranks_where(MPI_COMM_WORLD, refused).size()) == n);
    }
    c.valid();  // and the valid call still runs, checked or not
  }
  comm.all_reduce(in, out, ReduceOp::sum);
  CHECK(b[7] == static_cast<float>(n));
  CHECK_FALSE(comm.broken());
}

TEST_CASE("absurd sizes in Config and in specs are refused naming the field") {
  // The InvalidArgument constructing a Communicator with `config` raises.
  auto refusal = [](const Config& config) {
    try {
      Communicator comm(MPI_COMM_WORLD, config);
    } catch (const InvalidArgument& e) {
      return std::string(e.what());
    }
    return std::string("no InvalidArgument");
  };
  for (const std::size_t chunk : {std::size_t{3}, std::size_t{4095}, SIZE_MAX, (std::size_t{1} << 30) + 1}) {
    Config config;
    config.chunk_bytes = chunk;
    const std::string message = refusal(config);
    CAPTURE(chunk);
    CHECK_MESSAGE(message.find("chunk_bytes = " + std::to_string(chunk)) != std::string::npos, message);
  }
  for (const char* spec : {"xring#1100", "pscpu#65", "tree:1k:rechd#1000"}) {
    const std::string message = refusal(Config{.all_reduce_spec = spec});
    CAPTURE(spec);
    CHECK_MESSAGE(message.find("shards") != std::string::npos, message);
  }
  // The bounds themselves are fine, and xring#64's reduce (its ring slots
  // and the non-roots' accumulator are apart) is exact.
  Communicator comm(MPI_COMM_WORLD, Config{.all_reduce_spec = "xring#64", .chunk_bytes = 4096});
  std::vector<std::int64_t> v(5000, comm.rank() + 1), out(5000, 0);
  comm.reduce({v.data(), v.size(), DataType::i64}, {out.data(), out.size(), DataType::i64}, ReduceOp::sum, 0);
  const std::int64_t n = comm.size();
  if (comm.rank() == 0) CHECK(out[4999] == n * (n + 1) / 2);
}

TEST_CASE("a timeout beyond the clock's range is a long timeout, not an instant expiry") {
  Communicator comm(MPI_COMM_WORLD);
  for (const double seconds : {9.3e9, 1e12, 1e300}) {
    int x = 1;
    CHECK_NOTHROW(comm.all_reduce({&x, 1, DataType::i32}, {&x, 1, DataType::i32}, ReduceOp::sum,
                                  {.timeout_seconds = seconds}));
    CHECK(x == world_size());
  }
}

TEST_CASE("an unknown algorithm in Config throws InvalidArgument from the constructor on every rank") {
  for (const char* spec : {"bogus", "tree:4k:nosuch#2", "xring#0", "tree:8k:mpi:4k:tree"}) {
    CAPTURE(spec);
    std::string message;
    bool right_type = false;
    try {
      Communicator comm(MPI_COMM_WORLD, Config{.all_reduce_spec = spec});
    } catch (const InvalidArgument& e) {
      right_type = true;
      message = e.what();
    }
    CHECK(right_type);
    CHECK_MESSAGE(message.find(spec) != std::string::npos, "message '" << message << "' should quote the spec");
    CHECK(static_cast<int>(ranks_where(MPI_COMM_WORLD, right_type).size()) == world_size());
  }
  std::string message;
  try {
    Communicator comm(MPI_COMM_WORLD, Config{.all_reduce_spec = "bogus"});
  } catch (const InvalidArgument& e) {
    message = e.what();
  }
  CHECK_MESSAGE(message.find("unknown algorithm 'bogus'") != std::string::npos, message);
  // World is still fine afterwards: a constructor that throws must not have
  // entered the collective MPI_Comm_dup on some ranks only.
  Communicator ok(MPI_COMM_WORLD, Config{.all_reduce_spec = "tree"});
  int x = 1;
  ok.all_reduce({&x, 1, DataType::i32}, {&x, 1, DataType::i32}, ReduceOp::sum);
  CHECK(x == world_size());
}

TEST_CASE("implementation = nccl on host tensors is InvalidArgument before anything is sent, whatever the count") {
  Communicator comm(MPI_COMM_WORLD);
  std::vector<float> a(4, 1.0f), b(4);
  const CommunicationOptions nccl{.implementation = Implementation::nccl};
  for (const std::size_t count : {std::size_t{4}, std::size_t{0}}) {
    CAPTURE(count);
    expect_invalid_everywhere(comm, "nccl on host memory: all_reduce", [&] {
      comm.all_reduce({a.data(), count, DataType::f32}, {b.data(), count, DataType::f32}, ReduceOp::sum, nccl);
    }, {"implementation = nccl", "host"});
    expect_invalid_everywhere(comm, "nccl on host memory: reduce", [&] {
      comm.reduce({a.data(), count, DataType::f32}, {b.data(), count, DataType::f32}, ReduceOp::sum, 0, nccl);
    }, {"implementation = nccl", "host"});
    expect_invalid_everywhere(comm, "nccl on host memory: broadcast", [&] {
      comm.broadcast({a.data(), count, DataType::f32}, 0, nccl);
    }, {"implementation = nccl", "host"});
    expect_invalid_everywhere(comm, "nccl on host memory: batch_all_reduce", [&] {
      std::vector<Tensor> tensors = {{a.data(), count, DataType::f32}, {b.data(), count, DataType::f32}};
      comm.batch_all_reduce(tensors, ReduceOp::sum, nccl);
    }, {"implementation = nccl", "host"});
  }
}

TEST_CASE("CUDA tensors without a usable GPU raise Unavailable on every rank; host calls still work") {
  Communicator comm(MPI_COMM_WORLD);
  std::vector<float> a(4, 1.0f), b(4);
  const Tensor in{a.data(), 4, DataType::f32, Memory::cuda, -1}, out{b.data(), 4, DataType::f32, Memory::cuda, -1};
  std::string message;
  bool unavailable = false, other = false;
  try {
    comm.all_reduce(in, out, ReduceOp::sum);
  } catch (const Unavailable& e) {
    unavailable = true;
    message = e.what();
  } catch (const std::exception& e) {
    other = true;
    message = e.what();
  }
  // On a GPU machine these host pointers are no device memory: the call
  // must still fail cleanly, but that is the GPU suite's business.
  if (!unavailable && !other) return;
  CAPTURE(message);
  CHECK(unavailable);
  CHECK(message.find("CUDA") != std::string::npos);
  std::vector<float> x(8, 1.0f);
  comm.all_reduce({x.data(), 8, DataType::f32}, {x.data(), 8, DataType::f32}, ReduceOp::sum);
  CHECK(x[7] == static_cast<float>(world_size()));
}

TEST_CASE("CUDA batches and CUDA replicas without a usable GPU raise Unavailable on every rank") {
  Communicator comm(MPI_COMM_WORLD);
  std::vector<float> a(4, 1.0f), b(4, 1.0f);
  const Tensor r0{a.data(), 4, DataType::f32, Memory::cuda, 0}, r1{b.data(), 4, DataType::f32, Memory::cuda, 1};
  MultiWorkerAllReduce strategy(comm, 2, "psgpu");
  for (int attempt = 0; attempt < 2; ++attempt) {
    std::string message;
    try {
      if (attempt == 0) {
        strategy.reduce(ReduceOp::sum, {r0, r1}, Destination::all_ranks());
      } else {
        std::vector<Tensor> batch{r0};
        comm.batch_all_reduce(batch, ReduceOp::sum);
      }
    } catch (const Unavailable& e) {
      message = e.what();
    } catch (const std::exception& e) {
      message = std::string("other: ") + e.what();
    }
    if (message.empty()) return;  // a GPU machine: the GPU suite's business
    CAPTURE(message);
    CHECK(message.find("CUDA tensors are unavailable") != std::string::npos);
  }
  std::vector<float> x(8, 1.0f);
  comm.all_reduce({x.data(), 8, DataType::f32}, {x.data(), 8, DataType::f32}, ReduceOp::sum);
  CHECK(x[7] == static_cast<float>(world_size()));
}
