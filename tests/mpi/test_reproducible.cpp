// The reproducible modes (docs/REPRODUCIBILITY.md), checked bit for bit
// against references this file computes itself from every rank's
// contribution (each rank can make any rank's data):
//   order  every spec (each registered host algorithm, auto, a tuned-file
//          style tuple list, hierarchical pairs, a spec read from
//          STRATA_SPEC_FILE), size, form (blocking, request, persistent,
//          batch) and collective gives the bits of the canonical fold:
//          element by element, in rank order 0..n-1, 16-bit sums in f32
//          rounded once. Run at several rank counts, on virtual nodes
//          (meson.build) and on emulated hosts (tests/cluster), the
//          reference being the same everywhere, so layouts agree with each
//          other too.
//   exact  every rotation of which rank holds which contribution, and a
//          further rank contributing zeros, gives the same bits, and those
//          are the correctly rounded sum where the contributions of an
//          element lie within the range the mode converts exactly;
//          infinities and NaN give what IEEE addition gives.
#include <doctest/doctest.h>

#include <mpi.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <tuple>
#include <string>
#include <vector>

#include <unistd.h>

#include "harness.hpp"
#include "specs.hpp"
#include "strata/strata.hpp"

using namespace strata;
using namespace strata::test;

namespace {

// ---- data ------------------------------------------------------------------

std::uint64_t mix(std::uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  return x ^ (x >> 33);
}

// Contributor c's value for element i: mixed signs; magnitudes spread over
// `spread` binary orders above a per-element base (the base moves over
// 2^-20 .. 2^20, so elements need different scales; for f16 over 2^-14 ..
// 2^-6, so that every sum stays finite).
double contribution(int c, std::size_t i, int spread, DataType dtype) {
  const std::uint64_t h = mix((static_cast<std::uint64_t>(c) << 40) ^ i ^ 0x9e3779b97f4a7c15ULL);
  const int base = dtype == DataType::f16 ? static_cast<int>(mix(i) % 9) - 14 : static_cast<int>(mix(i) % 41) - 20;
  const int exponent = base + static_cast<int>(h % static_cast<std::uint64_t>(spread));
  const double mantissa = 1.0 + static_cast<double>((h >> 8) & 0xfffff) / 1048576.0;  // [1, 2)
  return ((h >> 40) & 1 ? -1.0 : 1.0) * std::ldexp(mantissa, exponent);
}

// f16 / bf16 encode and decode (round to nearest even), independent of the library.
std::uint16_t to_f16(float f) {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  const std::uint32_t sign = (x >> 16) & 0x8000u;
  const std::uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) return static_cast<std::uint16_t>(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u : 0u));
  if (abs >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // rounds to inf
  const float magnitude = std::bit_cast<float>(abs);
  if (magnitude < 0x1p-14f) {  // subnormal result: a multiple of 2^-24
    const float scaled = std::nearbyint(magnitude * 0x1p24f);
    return static_cast<std::uint16_t>(sign | static_cast<std::uint32_t>(scaled));
  }
  const std::uint32_t exp = ((abs >> 23) - 112) << 10, mant = abs & 0x7fffffu;
  std::uint32_t result = exp | (mant >> 13);
  const std::uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (result & 1u))) ++result;
  return static_cast<std::uint16_t>(sign | result);
}
float from_f16(std::uint16_t h) {
  const std::uint32_t sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  if (exp == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));
  if (exp == 0) return (sign ? -1.0f : 1.0f) * static_cast<float>(mant) * 0x1p-24f;
  return std::bit_cast<float>(sign | ((exp + 112) << 23) | (mant << 13));
}
std::uint16_t to_bf16(float f) {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((x >> 16) | 0x40u);
  return static_cast<std::uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}
float from_bf16(std::uint16_t h) { return std::bit_cast<float>(static_cast<std::uint32_t>(h) << 16); }

std::size_t size_of(DataType dtype) {
  return dtype == DataType::f64 ? 8 : dtype == DataType::f32 ? 4 : 2;
}

// Element i of a typed buffer as a double, and a double stored as the type (rounded once).
double get(const std::vector<std::byte>& b, std::size_t i, DataType dtype) {
  const std::byte* p = b.data() + i * size_of(dtype);
  switch (dtype) {
    case DataType::f32: { float v; std::memcpy(&v, p, 4); return v; }
    case DataType::f64: { double v; std::memcpy(&v, p, 8); return v; }
    case DataType::f16: { std::uint16_t v; std::memcpy(&v, p, 2); return from_f16(v); }
    default: { std::uint16_t v; std::memcpy(&v, p, 2); return from_bf16(v); }
  }
}
// x rounded once to f16 or bf16 (nearest, ties to even), from a double:
// the nearest of the neighbours of the float route's answer.
std::uint16_t round_once_16(double x, DataType dtype) {
  auto encode = [&](float f) { return dtype == DataType::f16 ? to_f16(f) : to_bf16(f); };
  auto decode = [&](std::uint16_t h) { return static_cast<double>(dtype == DataType::f16 ? from_f16(h) : from_bf16(h)); };
  const std::uint16_t guess = encode(static_cast<float>(x));
  if (!std::isfinite(decode(guess)) || std::isnan(x)) return guess;
  std::uint16_t best = guess;
  for (const int step : {-1, 1}) {
    const std::uint16_t other = static_cast<std::uint16_t>(guess + step);
    if (!std::isfinite(decode(other)) || std::signbit(decode(other)) != std::signbit(decode(guess))) continue;
    const double d_other = std::fabs(decode(other) - x), d_best = std::fabs(decode(best) - x);
    if (d_other < d_best || (d_other == d_best && (other & 1u) == 0)) best = other;
  }
  return best;
}

void put(std::vector<std::byte>& b, std::size_t i, DataType dtype, double x) {
  std::byte* p = b.data() + i * size_of(dtype);
  switch (dtype) {
    case DataType::f32: { const float v = static_cast<float>(x); std::memcpy(p, &v, 4); return; }
    case DataType::f64: { std::memcpy(p, &x, 8); return; }
    default: { const std::uint16_t v = round_once_16(x, dtype); std::memcpy(p, &v, 2); return; }
  }
}

// Contributor c's whole buffer as `dtype` (`first`: the element index of its first element).
std::vector<std::byte> buffer_of(int c, std::size_t count, DataType dtype, int spread, std::size_t first = 0) {
  std::vector<std::byte> b(count * size_of(dtype));
  for (std::size_t i = 0; i < count; ++i) put(b, i, dtype, contribution(c, first + i, spread, dtype));
  return b;
}

// ---- the canonical fold (mode order) ----------------------------------------

// The canonical result of `op` over contributors 0..n-1, element by element
// in rank order: f32 and f64 in their own arithmetic; 16-bit sums and means
// in f32, rounded once; 16-bit min and max exactly.
std::vector<std::byte> fold(int n, std::size_t count, DataType dtype, ReduceOp op, int spread, std::size_t first) {
  std::vector<std::vector<std::byte>> all;
  for (int c = 0; c < n; ++c) all.push_back(buffer_of(c, count, dtype, spread, first));
  std::vector<std::byte> out(count * size_of(dtype));
  for (std::size_t i = 0; i < count; ++i) {
    if (dtype == DataType::f64) {
      double acc = get(all[0], i, dtype);
      for (int c = 1; c < n; ++c) {
        const double x = get(all[c], i, dtype);
        acc = op == ReduceOp::prod ? acc * x
              : op == ReduceOp::min ? (x < acc ? x : acc)
              : op == ReduceOp::max ? (x > acc ? x : acc)
                                    : acc + x;
      }
      if (op == ReduceOp::mean) acc /= n;
      put(out, i, dtype, acc);
    } else {
      float acc = static_cast<float>(get(all[0], i, dtype));
      for (int c = 1; c < n; ++c) {
        const float x = static_cast<float>(get(all[c], i, dtype));
        acc = op == ReduceOp::prod ? acc * x
              : op == ReduceOp::min ? (x < acc ? x : acc)
              : op == ReduceOp::max ? (x > acc ? x : acc)
                                    : acc + x;
      }
      if (op == ReduceOp::mean) acc /= static_cast<float>(n);
      put(out, i, dtype, acc);
    }
  }
  return out;
}

// fold(), remembered: every spec is checked against the same references.
const std::vector<std::byte>& canonical(int n, std::size_t count, DataType dtype, ReduceOp op, int spread,
                                        std::size_t first = 0) {
  static std::map<std::tuple<int, std::size_t, int, int, int, std::size_t>, std::vector<std::byte>> kept;
  const auto key = std::make_tuple(n, count, static_cast<int>(dtype), static_cast<int>(op), spread, first);
  auto found = kept.find(key);
  if (found == kept.end()) found = kept.emplace(key, fold(n, count, dtype, op, spread, first)).first;
  return found->second;
}

std::string label(const std::string& what, DataType dtype, ReduceOp op, std::size_t count) {
  return what + " " + std::string(to_string(dtype)) + " " + std::string(to_string(op)) + " x" + std::to_string(count);
}

// The first element where `got` differs from `want` bit for bit, or -1.
long first_difference(const std::vector<std::byte>& got, const std::vector<std::byte>& want, DataType dtype) {
  const std::size_t e = size_of(dtype);
  for (std::size_t i = 0; i * e < want.size(); ++i)
    if (std::memcmp(got.data() + i * e, want.data() + i * e, e) != 0) return static_cast<long>(i);
  return -1;
}

void check_bits(const std::vector<std::byte>& got, const std::vector<std::byte>& want, DataType dtype,
                const std::string& what) {
  const long at = first_difference(got, want, dtype);
  CHECK_MESSAGE(at < 0, what << ": element " << at << " = " << (at < 0 ? 0.0 : get(got, at, dtype)) << ", want "
                             << (at < 0 ? 0.0 : get(want, at, dtype)) << " (rank " << world_rank() << ")");
}

Communicator make(MPI_Comm comm, const std::string& spec, const std::string& mode) {
  Config config;
  config.all_reduce_spec = spec;
  config.reproducible = mode;
  return Communicator(comm, config);
}

constexpr int kSpread = 24;  // magnitudes over 2^24: sums whose bits depend on the order

std::vector<std::string> order_specs() {
  std::vector<std::string> specs = {"auto", "tree:4k:xring#2:64k:rechd", "pscpu/xring", "xring/rechd", "tree/pscpu"};
  for (const std::string& name : algorithm_names()) specs.push_back(name);
  return only_requested(specs);
}

// The counts: one element, below 64 KiB and above 256 KiB of f32 (the host thresholds).
const std::size_t kCounts[] = {1, 1500, 70001};

}  // namespace

TEST_CASE("order: every spec, size, dtype and op gives the canonical fold's bits (all_reduce, reduce, reduce_scatter)") {
  const int rank = world_rank(), n = world_size();
  for (const std::string& spec : order_specs()) {
    Communicator comm = make(MPI_COMM_WORLD, spec, "order");
    for (const DataType dtype : {DataType::f32, DataType::f64, DataType::f16, DataType::bf16}) {
      for (const ReduceOp op : {ReduceOp::sum, ReduceOp::mean, ReduceOp::prod, ReduceOp::min, ReduceOp::max}) {
        // 16-bit: the f32 accumulation (sum, mean) and one exact op (max).
        const bool sixteen = dtype == DataType::f16 || dtype == DataType::bf16;
        if (sixteen && (op == ReduceOp::prod || op == ReduceOp::min)) continue;
        const int spread = op == ReduceOp::prod ? 2 : kSpread;  // products stay finite
        for (const std::size_t count : kCounts) {
          const std::vector<std::byte>& want = canonical(n, count, dtype, op, spread);
          std::vector<std::byte> data = buffer_of(rank, count, dtype, spread);
          comm.all_reduce({data.data(), count, dtype}, {data.data(), count, dtype}, op);
          check_bits(data, want, dtype, label(spec + " all_reduce", dtype, op, count));

          const int root = n - 1;
          std::vector<std::byte> in = buffer_of(rank, count, dtype, spread), out(in.size());
          comm.reduce({in.data(), count, dtype}, {out.data(), count, dtype}, op, root);
          if (rank == root) check_bits(out, want, dtype, label(spec + " reduce", dtype, op, count));

          if (count > 20000) continue;  // reduce_scatter: every rank's block of n x count
          std::vector<std::byte> whole(count * static_cast<std::size_t>(n) * size_of(dtype)), block(count * size_of(dtype));
          for (int b = 0; b < n; ++b) {
            const std::vector<std::byte> part = buffer_of(rank, count, dtype, spread, static_cast<std::size_t>(b) * count);
            std::memcpy(whole.data() + static_cast<std::size_t>(b) * part.size(), part.data(), part.size());
          }
          comm.reduce_scatter({whole.data(), whole.size() / size_of(dtype), dtype}, {block.data(), count, dtype}, op);
          check_bits(block, canonical(n, count, dtype, op, spread, static_cast<std::size_t>(rank) * count), dtype,
                     label(spec + " reduce_scatter", dtype, op, count));
        }
      }
    }
  }
}

TEST_CASE("order: requests, persistent requests and batches give the blocking call's bits") {
  const int rank = world_rank(), n = world_size();
  for (const std::string& spec : order_specs()) {
    Communicator comm = make(MPI_COMM_WORLD, spec, "order");
    for (const DataType dtype : {DataType::f32, DataType::bf16}) {
      const std::size_t count = 17000;
      const std::vector<std::byte> want = canonical(n, count, dtype, ReduceOp::sum, kSpread);

      std::vector<std::byte> a = buffer_of(rank, count, dtype, kSpread), out(a.size());
      Request request = comm.iall_reduce({a.data(), count, dtype}, {out.data(), count, dtype}, ReduceOp::sum);
      request.wait();
      check_bits(out, want, dtype, label(spec + " iall_reduce", dtype, ReduceOp::sum, count));

      Request persistent = comm.all_reduce_init({a.data(), count, dtype}, {out.data(), count, dtype}, ReduceOp::sum);
      for (int round = 0; round < 2; ++round) {
        std::memset(out.data(), 0, out.size());
        persistent.start();
        persistent.wait();
        check_bits(out, want, dtype, label(spec + " persistent", dtype, ReduceOp::sum, count));
      }

      // A batch: the same data split in two tensors, packed together, apart and in many packs.
      for (const int packs : {1, 2, 7}) {
        std::vector<std::byte> b = buffer_of(rank, count, dtype, kSpread);
        const std::size_t head = 4097;
        std::vector<Tensor> tensors = {{b.data(), head, dtype}, {b.data() + head * size_of(dtype), count - head, dtype}};
        PackingOptions packing;
        packing.num_packs = packs;
        comm.batch_all_reduce(tensors, ReduceOp::sum, packing);
        check_bits(b, want, dtype, label(spec + " batch/" + std::to_string(packs), dtype, ReduceOp::sum, count));
      }
    }
  }
}

TEST_CASE("order: the ring's chunk size and the progress thread leave the bits alone") {
  const int rank = world_rank(), n = world_size();
  const std::size_t count = 70001;
  const std::vector<std::byte>& want = canonical(n, count, DataType::f32, ReduceOp::sum, kSpread);
  for (const std::size_t chunk : {std::size_t{4096}, std::size_t{1} << 20})
    for (const bool thread : {false, true}) {
      Config config;
      config.all_reduce_spec = "xring";
      config.chunk_bytes = chunk;
      config.progress_thread = thread;
      config.reproducible = "order";
      Communicator comm(MPI_COMM_WORLD, config);
      std::vector<std::byte> a = buffer_of(rank, count, DataType::f32, kSpread), out(a.size());
      comm.all_reduce({a.data(), count, DataType::f32}, {out.data(), count, DataType::f32}, ReduceOp::sum);
      check_bits(out, want, DataType::f32, label("chunk " + std::to_string(chunk), DataType::f32, ReduceOp::sum, count));
      Request request = comm.iall_reduce({a.data(), count, DataType::f32}, {out.data(), count, DataType::f32}, ReduceOp::sum);
      request.wait();
      check_bits(out, want, DataType::f32, label("request, progress thread " + std::to_string(thread), DataType::f32, ReduceOp::sum, count));
    }
}

TEST_CASE("order: a tuned spec read from STRATA_SPEC_FILE gives the canonical fold's bits") {
  const int rank = world_rank(), n = world_size();
  // A file as strata-tune writes it: comments, then one spec whose
  // thresholds fall between the counts below.
  const std::string path = "/tmp/strata-test-reproducible-spec-" + std::to_string(rank) + "-" +
                           std::to_string(static_cast<long>(getpid()));
  {
    std::FILE* file = std::fopen(path.c_str(), "w");
    REQUIRE(file != nullptr);
    std::fputs("# measured by strata-tune\n\ntree:2k:rechd:32k:xring#2\n", file);
    std::fclose(file);
  }
  ::setenv("STRATA_SPEC_FILE", path.c_str(), 1);
  Config config;  // no spec: the file's
  config.reproducible = "order";
  Communicator comm(MPI_COMM_WORLD, config);
  ::unsetenv("STRATA_SPEC_FILE");
  std::remove(path.c_str());
  CHECK(comm.all_reduce_spec() == AllReduceSpec("tree:2k:rechd:32k:xring#2"));
  for (const std::size_t count : kCounts) {
    const std::vector<std::byte>& want = canonical(n, count, DataType::f32, ReduceOp::sum, kSpread);
    std::vector<std::byte> a = buffer_of(rank, count, DataType::f32, kSpread), out(a.size());
    comm.all_reduce({a.data(), count, DataType::f32}, {out.data(), count, DataType::f32}, ReduceOp::sum);
    check_bits(out, want, DataType::f32, label("STRATA_SPEC_FILE", DataType::f32, ReduceOp::sum, count));
  }
}

TEST_CASE("accumulate_f32: 16-bit sums accumulate in f32 and round once on every algorithm, outside the reproducible modes") {
  const int rank = world_rank(), n = world_size();
  if (n > 2) return;  // with more ranks only the order of the f32 additions would be in question
  for (const std::string& spec : order_specs()) {
    Config config;
    config.all_reduce_spec = spec;
    config.accumulate_f32 = true;
    Communicator comm(MPI_COMM_WORLD, config);
    for (const DataType dtype : {DataType::f16, DataType::bf16})
      for (const ReduceOp op : {ReduceOp::sum, ReduceOp::mean}) {
        const std::size_t count = 17000;
        std::vector<std::byte> data = buffer_of(rank, count, dtype, kSpread);
        comm.all_reduce({data.data(), count, dtype}, {data.data(), count, dtype}, op);
        check_bits(data, canonical(n, count, dtype, op, kSpread), dtype, label(spec + " f32 accumulation", dtype, op, count));
      }
  }
}

namespace {

// ---- the exact sum (mode exact) --------------------------------------------

// Magnitudes over 2^16 per element (2^12 for f64): the mode converts every
// such contribution exactly, so its result is the correctly rounded sum.
int exact_spread(DataType dtype) { return dtype == DataType::f64 ? 12 : 16; }

// The correctly rounded sum (a mean: the sum rounded to double, divided,
// rounded) of contributors 0..n-1, from __float128, where every
// contribution's bits fit.
std::vector<std::byte> exact_reference(int n, std::size_t count, DataType dtype, ReduceOp op, int spread) {
  std::vector<std::vector<std::byte>> all;
  for (int c = 0; c < n; ++c) all.push_back(buffer_of(c, count, dtype, spread));
  std::vector<std::byte> out(count * size_of(dtype));
  for (std::size_t i = 0; i < count; ++i) {
    __float128 sum = 0;
    for (int c = 0; c < n; ++c) sum += static_cast<__float128>(get(all[c], i, dtype));
    double v = static_cast<double>(sum);
    if (op == ReduceOp::mean) {
      v /= n;
      put(out, i, dtype, v);
    } else if (dtype == DataType::f32) {
      const float f = static_cast<float>(sum);
      std::memcpy(out.data() + i * 4, &f, 4);
    } else {
      put(out, i, dtype, v);  // f64; f16 and bf16: v holds the sum exactly, rounded once here
    }
    if (get(out, i, dtype) == 0) put(out, i, dtype, 0.0);  // a zero sum is +0
  }
  return out;
}

// The all_reduce in exact mode of contributor `c`'s data on `comm`.
std::vector<std::byte> exact_all_reduce(Communicator& comm, int c, std::size_t count, DataType dtype, ReduceOp op,
                                        int spread) {
  std::vector<std::byte> data = c < 0 ? std::vector<std::byte>(count * size_of(dtype)) : buffer_of(c, count, dtype, spread);
  comm.all_reduce({data.data(), count, dtype}, {data.data(), count, dtype}, op);
  return data;
}

}  // namespace

TEST_CASE("exact: every rotation of the contributions gives the correctly rounded sum's bits, on every spec") {
  const int rank = world_rank(), n = world_size();
  for (const std::string& spec : only_requested({"auto", "xring", "rechd", "tree", "pscpu/xring", "mpi"})) {
    if (!registered(spec.substr(0, spec.find('/'))) && spec != "auto") continue;
    Communicator comm = make(MPI_COMM_WORLD, spec, "exact");
    for (const DataType dtype : {DataType::f32, DataType::f64, DataType::f16, DataType::bf16})
      for (const ReduceOp op : {ReduceOp::sum, ReduceOp::mean})
        for (const std::size_t count : {std::size_t{1}, std::size_t{5000}, std::size_t{70001}}) {
          const int spread = exact_spread(dtype);
          const std::vector<std::byte> want = exact_reference(n, count, dtype, op, spread);
          for (int k = 0; k < n; ++k) {
            const std::vector<std::byte> got = exact_all_reduce(comm, (rank + k) % n, count, dtype, op, spread);
            check_bits(got, want, dtype, label(spec + " exact rotation " + std::to_string(k), dtype, op, count));
          }
        }
  }
}

TEST_CASE("exact: a further rank contributing zeros, reduce and reduce_scatter give the same bits; wide ranges stay rotation-free") {
  const int rank = world_rank(), n = world_size();
  if (n < 2) return;
  // The first n-1 ranks alone, against all n with the last contributing zeros.
  MPI_Comm fewer = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, rank < n - 1 ? 0 : MPI_UNDEFINED, rank, &fewer);
  Communicator all = make(MPI_COMM_WORLD, "auto", "exact");
  for (const DataType dtype : {DataType::f32, DataType::f64, DataType::bf16}) {
    const std::size_t count = 9000;
    const int spread = 40;  // beyond the exactly converted range: only invariance is promised
    const std::vector<std::byte> with_zero =
        exact_all_reduce(all, rank < n - 1 ? rank : -1, count, dtype, ReduceOp::sum, spread);
    std::vector<std::byte> alone(with_zero.size());
    if (fewer != MPI_COMM_NULL) {
      Communicator some = make(fewer, "xring", "exact");
      alone = exact_all_reduce(some, rank, count, dtype, ReduceOp::sum, spread);
      check_bits(with_zero, alone, dtype, label("exact with a zero rank", dtype, ReduceOp::sum, count));
    }
    // Every rotation over the n-1 contributors plus the zero rank agrees too.
    for (int k = 1; k < n; ++k) {
      const int c = (rank + k) % n;
      const std::vector<std::byte> rotated = exact_all_reduce(all, c < n - 1 ? c : -1, count, dtype, ReduceOp::sum, spread);
      check_bits(rotated, with_zero, dtype, label("exact rotation with a zero rank " + std::to_string(k), dtype, ReduceOp::sum, count));
    }
    // reduce and reduce_scatter give all_reduce's bits.
    std::vector<std::byte> in = buffer_of(rank, count, dtype, spread), out(in.size());
    all.reduce({in.data(), count, dtype}, {out.data(), count, dtype}, ReduceOp::sum, 0);
    const std::vector<std::byte> everyone = exact_all_reduce(all, rank, count, dtype, ReduceOp::sum, spread);
    if (rank == 0) check_bits(out, everyone, dtype, label("exact reduce", dtype, ReduceOp::sum, count));
    const std::size_t block = count / static_cast<std::size_t>(n);
    std::vector<std::byte> mine(block * size_of(dtype));
    all.reduce_scatter({in.data(), block * static_cast<std::size_t>(n), dtype}, {mine.data(), block, dtype}, ReduceOp::sum);
    std::vector<std::byte> expected(everyone.begin() + static_cast<long>(static_cast<std::size_t>(rank) * block * size_of(dtype)),
                                    everyone.begin() + static_cast<long>(static_cast<std::size_t>(rank + 1) * block * size_of(dtype)));
    check_bits(mine, expected, dtype, label("exact reduce_scatter", dtype, ReduceOp::sum, block));
    // A reduce large enough that every rank sums a slice for the root (on
    // one node), to the last rank.
    const std::size_t large = 45000;
    std::vector<std::byte> large_in = buffer_of(rank, large, dtype, spread), large_out(large_in.size());
    all.reduce({large_in.data(), large, dtype}, {large_out.data(), large, dtype}, ReduceOp::sum, n - 1);
    const std::vector<std::byte> large_all = exact_all_reduce(all, rank, large, dtype, ReduceOp::sum, spread);
    if (rank == n - 1) check_bits(large_out, large_all, dtype, label("exact reduce to the last rank", dtype, ReduceOp::sum, large));
  }
  if (fewer != MPI_COMM_NULL) MPI_Comm_free(&fewer);
}

TEST_CASE("exact: infinities and NaN give what IEEE addition gives") {
  const int rank = world_rank(), n = world_size();
  Communicator comm = make(MPI_COMM_WORLD, "auto", "exact");
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  for (const DataType dtype : {DataType::f32, DataType::f64, DataType::f16}) {
    std::vector<std::byte> data = buffer_of(rank, 8, dtype, 4);
    if (rank == n - 1) {
      put(data, 0, dtype, inf);
      put(data, 1, dtype, -inf);
      put(data, 2, dtype, inf);
      put(data, 3, dtype, nan);
    }
    if (rank == 0) put(data, 2, dtype, n > 1 ? -inf : inf);
    comm.all_reduce({data.data(), 8, dtype}, {data.data(), 8, dtype}, ReduceOp::sum);
    CHECK(get(data, 0, dtype) == inf);
    CHECK(get(data, 1, dtype) == -inf);
    CHECK(std::isnan(get(data, 2, dtype)) == (n > 1));
    CHECK(std::isnan(get(data, 3, dtype)));
    CHECK(std::isfinite(get(data, 4, dtype)));
  }
}

TEST_CASE("a mode the ranks do not share, or an unknown one, is refused on every rank") {
  const int rank = world_rank();
  bool refused = false;
  try {
    Communicator comm = make(MPI_COMM_WORLD, "auto", "bitwise");
  } catch (const InvalidArgument& e) {
    refused = std::string(e.what()).find("order or exact") != std::string::npos;
  }
  CHECK(refused);
  if (world_size() < 2) return;
  std::string message;
  try {
    Communicator comm = make(MPI_COMM_WORLD, "auto", rank == 0 ? "exact" : "order");
  } catch (const InvalidArgument& e) {
    message = e.what();
  }
  CHECK_MESSAGE(message.find("reduce unlike") != std::string::npos, "rank " << rank << ": '" << message << "'");
}
