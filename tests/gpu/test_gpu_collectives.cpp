// Every GPU plan x op x dtype through the public API on CUDA tensors
// against a host reference, identical bits on every rank, in and out of
// place; min/max with NaN inputs (one semantics on every path: NaN wins);
// a message of several host-staging chunks; reduce and broadcast;
// reduce_scatter and all_gather; the non-blocking and persistent forms.
// Small integers reduce exactly in any order, so every floating dtype x op
// also runs on inexact floats (reduction_order.hpp) in all_reduce,
// reduce_scatter, reduce and the requests: bit for bit against the host's
// fold of the contributions in the order strata fixes for the plan (psgpu
// and the NaN-keeping exchange in rank order), within rounding where the
// order is the algorithm's own (NCCL's sums, rings, trees); psgpu also on
// a message of several pinned rounds.
// Each spec is a Communicator's all_reduce_spec, so the call takes the real
// path: plan (plan::choose, the control plane's verdicts), execute (the
// registry's GPU levels, the one hierarchical driver), finish.
//
// Run under mpirun with STRATA_RANKS_PER_NODE (virtual nodes), so
// hierarchical paths run even with one GPU. The full matrix (every dtype
// and size) runs each all-reduce case in one placement, alternating over
// the sizes so that every dtype x op runs in and out of place, and the
// several-chunk case for the specs that stage through host memory.
// `--core`, for the layouts of CI that are not the full matrix's
// (tests/gpu/meson.build), keeps every spec, op, NaN case and rooted case
// but runs four dtypes (one per width), the two smaller sizes in both
// placements, the several-chunk case for the xring specs only, inexact
// floats in f32 and bf16, and psgpu's several-round case for flat psgpu. A spec
// whose NCCL levels the control plane refuses here (two ranks of one NCCL
// communicator on one GPU) must raise Unavailable on every rank with the
// same text before any work: the test checks that, reports the case as
// skipped with the reason, and goes on. "auto" must never be refused.
// Exits 77 without a CUDA device.
#include <cuda_runtime.h>
#include <mpi.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <iterator>
#include <limits>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "gpu_specs.hpp"
#include "gpu_program.hpp"
#include "gpu_test.hpp"
#include "host/reduce_kernel.hpp"
#include "reduction_order.hpp"
#include "strata/strata.hpp"
#include "util/half.hpp"

using namespace strata;
using strata::test::every_rank_check;

namespace {

int rank = 0, size = 1, skipped = 0;
bool core = false;  // --core

// Whether every rank holds the same bytes.
bool same_everywhere(const std::vector<std::byte>& bytes) {
  return test::same_on_all_ranks(MPI_COMM_WORLD, test::hash_bytes(bytes.data(), bytes.size()));
}

bool floating(DataType d) {
  return d == DataType::f32 || d == DataType::f64 || d == DataType::f16 || d == DataType::bf16;
}

// Small integers in every dtype: sums, products and means are exact and
// independent of the reduction order, so any correct algorithm matches.
// With `nan`, a floating input also holds a quiet NaN where i % 97 == rank.
std::vector<std::byte> make_input(DataType dtype, std::size_t count, int q, bool nan) {
  const std::size_t e = dtype_size(dtype);
  std::vector<std::byte> bytes(count * e);
  for (std::size_t i = 0; i < count; ++i) {
    const int v = int((i * 7 + std::size_t(q) * 3) % 5) - 2;
    std::byte* at = bytes.data() + i * e;
    const bool here = nan && i % 97 == std::size_t(q);
    const float f = here ? std::numeric_limits<float>::quiet_NaN() : float(v);
    const double d = here ? std::numeric_limits<double>::quiet_NaN() : double(v);
    const long long l = v;
    switch (dtype) {
      case DataType::f32: std::memcpy(at, &f, e); break;
      case DataType::f64: std::memcpy(at, &d, e); break;
      case DataType::f16: { const auto h = util::f32_to_f16(f); std::memcpy(at, &h, e); break; }
      case DataType::bf16: { const auto h = util::f32_to_bf16(f); std::memcpy(at, &h, e); break; }
      default: std::memcpy(at, &l, e); break;  // little-endian truncation = wrap
    }
  }
  return bytes;
}

// The host reference: every rank's make_input(dtype, count, q, nan) reduced
// with `op` (mean: summed, then divided). Computed once per case and kept:
// every spec checks the same cases, and recomputing them for each (every
// rank's input, on every rank) took a fifth of the test's time.
const std::vector<std::byte>& reference(DataType dtype, std::size_t count, ReduceOp op, bool nan) {
  static std::map<std::tuple<DataType, std::size_t, ReduceOp, bool>, std::vector<std::byte>> kept;
  auto [it, fresh] = kept.try_emplace({dtype, count, op, nan});
  if (fresh) {
    std::vector<std::byte>& want = it->second;
    want = make_input(dtype, count, 0, nan);
    for (int q = 1; q < size; ++q)
      host::reduce_into(want.data(), want.data(), make_input(dtype, count, q, nan).data(), count, dtype,
                        op == ReduceOp::mean ? ReduceOp::sum : op);
    if (op == ReduceOp::mean) host::divide_by(want.data(), count, dtype, std::size_t(size));
  }
  return it->second;
}

bool is_nan(const std::byte* at, DataType dtype) {
  switch (dtype) {
    case DataType::f32: { float f; std::memcpy(&f, at, 4); return std::isnan(f); }
    case DataType::f64: { double d; std::memcpy(&d, at, 8); return std::isnan(d); }
    case DataType::f16: { std::uint16_t h; std::memcpy(&h, at, 2); return (h & 0x7c00) == 0x7c00 && (h & 0x3ff); }
    case DataType::bf16: { std::uint16_t h; std::memcpy(&h, at, 2); return (h & 0x7f80) == 0x7f80 && (h & 0x7f); }
    default: return false;
  }
}

// Bits equal, or both NaN (payloads may differ between host and GPU arithmetic).
bool matches(const std::vector<std::byte>& got, const std::vector<std::byte>& want, DataType dtype) {
  const std::size_t e = dtype_size(dtype);
  for (std::size_t i = 0; i < got.size(); i += e)
    if (std::memcmp(&got[i], &want[i], e) != 0 && !(is_nan(&got[i], dtype) && is_nan(&want[i], dtype))) return false;
  return true;
}

// Every rank's inexact contribution to a case (reduction_order.hpp),
// computed once and kept: every spec checks the same cases. `salt` gives
// another set of contributions.
const std::vector<std::vector<std::byte>>& inexact_inputs(DataType dtype, std::size_t count, ReduceOp op,
                                                          int salt = 0) {
  static std::map<std::tuple<DataType, std::size_t, ReduceOp, int>, std::vector<std::vector<std::byte>>> kept;
  auto [it, fresh] = kept.try_emplace({dtype, count, op, salt});
  if (fresh)
    for (int q = 0; q < size; ++q)
      it->second.push_back(gpu_test::inexact_values(dtype, count, op, std::uint64_t(salt) * 1000 + std::uint64_t(q)));
  return it->second;
}

// "" when `got`, elements [first, first + count) of `collective`'s result
// over inexact_inputs(dtype, input_count, op, salt), is what the plan the
// communicator runs for it gives (gpu_test::Expected); else what differs.
// Expectations are kept by the fold's signature: plans that reduce alike
// share one.
std::string check_plan(const Communicator& comm, Collective collective, std::size_t call_bytes,
                       const std::vector<std::byte>& got, DataType dtype, std::size_t input_count, ReduceOp op,
                       int salt, std::size_t first, std::size_t count) {
  const std::string algorithm = comm.algorithm_for(call_bytes, collective, Memory::cuda);
  const gpu_test::Fold fold = gpu_test::plan_fold(algorithm, comm.topology(), collective, op, dtype,
                                                  [](int r) { return gpu_test::Fold{r, {}, true}; });
  using Key = std::tuple<std::string, DataType, std::size_t, ReduceOp, int, std::size_t, std::size_t>;
  static std::map<Key, gpu_test::Expected> kept;
  auto [it, fresh] = kept.try_emplace(Key{gpu_test::signature(fold, op), dtype, input_count, op, salt, first, count});
  if (fresh)
    it->second = gpu_test::expect(fold, inexact_inputs(dtype, input_count, op, salt), first, count, dtype, op,
                                  std::size_t(size));
  const std::string why = it->second.compare(got);
  return why.empty() ? why : why + " (plan " + algorithm + ")";
}

struct Device {
  void* p = nullptr;
  explicit Device(std::size_t bytes) { cudaMalloc(&p, bytes ? bytes : 1); }
  ~Device() { cudaFree(p); }
};

// Runs `call`; on Unavailable checks that every rank raised the same text.
// Returns false (skipped) when it was refused.
template <typename Call>
bool run_or_skip(const std::string& label, Call&& call) {
  std::string refused;
  try {
    call();
  } catch (const Unavailable& e) {
    refused = e.what();
  }
  // Identical outcome on every rank: refused with one text, or not at all.
  // (Messages start "strata [host:rank]:", which differs; compare the rest.)
  const std::string tail = refused.substr(std::min(refused.size(), refused.find("]: ") + 1));
  every_rank_check(test::same_on_all_ranks(MPI_COMM_WORLD, refused.empty() ? 0 : test::hash_bytes(tail.data(), tail.size())),
          label + ": ranks disagree on whether (or why) it is Unavailable");
  if (refused.empty()) return true;
  if (rank == 0) std::printf("skip %s: %s\n", label.c_str(), refused.c_str());
  ++skipped;
  return false;
}

void all_reduce_cases(Communicator& comm, const std::string& spec, int device) {
  const std::vector<DataType> dtypes =
      core ? std::vector<DataType>{DataType::f32, DataType::bf16, DataType::i8, DataType::i64}
           : std::vector<DataType>{DataType::f32, DataType::f64, DataType::f16, DataType::bf16, DataType::i8,
                                   DataType::u8,  DataType::i32, DataType::u32, DataType::i64,  DataType::u64};
  const ReduceOp ops[] = {ReduceOp::sum, ReduceOp::mean, ReduceOp::min, ReduceOp::max, ReduceOp::prod};
  // Counts: fewer elements than ranks (no block per owner, a tail only),
  // divisible by 2 and 3 (NCCL's blocks only), odd (blocks and a tail).
  const std::size_t counts[] = {3, 6, 4099, 300001};
  for (std::size_t size_index = 0; size_index < std::size(counts); ++size_index)
    for (DataType dtype : dtypes)
      for (ReduceOp op : ops)
        for (const bool nan : {false, true}) {
          const std::size_t count = counts[size_index];
          if (core && (count > 10000 || count == 3)) continue;
          if (nan && !(floating(dtype) && (op == ReduceOp::min || op == ReduceOp::max))) continue;
          // The large size (vector bodies, chunked staging) for one dtype of each width class.
          if (count > 10000 && dtype != DataType::f32 && dtype != DataType::bf16 && dtype != DataType::i64) continue;
          const std::size_t e = dtype_size(dtype), bytes = count * e;
          const std::vector<std::byte>& want = reference(dtype, count, op, nan);
          const auto input = make_input(dtype, count, rank, nan);
          Device din(bytes), dout(bytes);
          for (const bool in_place : {false, true}) {
            // The full matrix takes one placement per case, alternating
            // over the sizes, so each dtype x op runs both; the core both.
            if (!core && in_place != ((size_index + std::size_t(op)) % 2 == 1)) continue;
            // Pageable cudaMemcpy on the legacy default stream: strata orders
            // its work after that stream by default (CommunicationOptions::stream).
            cudaMemcpy(din.p, input.data(), bytes, cudaMemcpyHostToDevice);
            const std::string label = spec + " " + std::string(to_string(dtype)) + " " + std::string(to_string(op)) +
                                      " count " + std::to_string(count) + (nan ? " with NaN" : "") +
                                      (in_place ? " in place" : " out of place");
            const Tensor in{din.p, count, dtype, Memory::cuda, device};
            const Tensor out{in_place ? din.p : dout.p, count, dtype, Memory::cuda, device};
            if (!run_or_skip(label, [&] { comm.all_reduce(in, out, op, {.timeout_seconds = 120}); })) return;
            std::vector<std::byte> got(bytes);
            cudaMemcpy(got.data(), out.data, bytes, cudaMemcpyDeviceToHost);
            every_rank_check(matches(got, want, dtype), label + ": differs from the host reference");
            every_rank_check(same_everywhere(got), label + ": differs between ranks");
          }
        }
}

// f16 mean is sum, then divide, in f16 (docs/GPU.md, "Mean"): a sum past
// 65504 is +inf although the mean would fit, on the GPU as on the host. The
// documented behaviour, checked against the host reference.
void f16_mean_overflow_case(Communicator& comm, const std::string& spec, int device) {
  if (size < 2) return;
  const std::size_t count = 64, bytes = count * 2;
  const std::uint16_t big = util::f32_to_f16(40000.0f);
  std::vector<std::uint16_t> input(count, big), want(count, big);
  for (int q = 1; q < size; ++q) host::reduce_into(want.data(), want.data(), input.data(), count, DataType::f16, ReduceOp::sum);
  host::divide_by(want.data(), count, DataType::f16, std::size_t(size));
  Device d(bytes);
  cudaMemcpy(d.p, input.data(), bytes, cudaMemcpyHostToDevice);
  const Tensor t{d.p, count, DataType::f16, Memory::cuda, device};
  const std::string label = spec + " f16 mean whose sum overflows";
  if (!run_or_skip(label, [&] { comm.all_reduce(t, t, ReduceOp::mean, {.timeout_seconds = 120}); })) return;
  std::vector<std::uint16_t> got(count);
  cudaMemcpy(got.data(), d.p, bytes, cudaMemcpyDeviceToHost);
  every_rank_check(got == want && want[0] == 0x7c00, label + ": +inf, as on the host");
}

// A message of several host-staging chunks (4 MiB each, a ring of four
// pinned buffers): the ring wraps around and the last chunk is partial.
void large_case(Communicator& comm, const std::string& spec, int device) {
  const std::size_t count = 5000003, bytes = count * 4;
  const std::vector<std::byte>& want = reference(DataType::f32, count, ReduceOp::sum, false);
  const auto input = make_input(DataType::f32, count, rank, false);
  Device d(bytes);
  cudaMemcpy(d.p, input.data(), bytes, cudaMemcpyHostToDevice);
  const Tensor t{d.p, count, DataType::f32, Memory::cuda, device};
  const std::string label = spec + " f32 sum count 5000003 (several staging chunks) in place";
  if (!run_or_skip(label, [&] { comm.all_reduce(t, t, ReduceOp::sum, {.timeout_seconds = 300}); })) return;
  std::vector<std::byte> got(bytes);
  cudaMemcpy(got.data(), d.p, bytes, cudaMemcpyDeviceToHost);
  every_rank_check(got == want, label + ": differs from the host reference");
  every_rank_check(same_everywhere(got), label + ": differs between ranks");
}

// Whether the several-chunk case runs for `spec`: where a level stages
// through host memory (the host algorithms' names), and `auto`, what users
// run; the core runs only xring's. NCCL and psgpu levels move device memory
// with no staging chunks to wrap around.
bool stages_on_host(const std::string& spec, bool core_only) {
  if (core_only) return spec.find("xring") != std::string::npos;
  return spec == "auto" || spec.find("xring") != std::string::npos || spec.find("pscpu") != std::string::npos ||
         spec.find("rechd") != std::string::npos;
}

void rooted_cases(Communicator& comm, const std::string& spec, int device) {
  const std::size_t count = 100003, bytes = count * 4;
  for (int root : {0, size - 1}) {
    // Broadcast from root.
    {
      const auto mine = make_input(DataType::i32, count, rank, false);
      Device d(bytes);
      cudaMemcpy(d.p, mine.data(), bytes, cudaMemcpyHostToDevice);
      const std::string label = spec + " broadcast from " + std::to_string(root);
      if (!run_or_skip(label, [&] {
            comm.broadcast({d.p, count, DataType::i32, Memory::cuda, device}, root, {.timeout_seconds = 120});
          }))
        return;
      std::vector<std::byte> got(bytes);
      cudaMemcpy(got.data(), d.p, bytes, cudaMemcpyDeviceToHost);
      every_rank_check(got == make_input(DataType::i32, count, root, false), label + ": wrong");
    }
    // Reduce (max, with NaN in f32) to root.
    for (const DataType dtype : {DataType::i32, DataType::f32}) {
      const bool nan = dtype == DataType::f32;
      const auto mine = make_input(dtype, count, rank, nan);
      const std::vector<std::byte>& want = reference(dtype, count, ReduceOp::max, nan);
      Device din(bytes), dout(bytes);
      cudaMemcpy(din.p, mine.data(), bytes, cudaMemcpyHostToDevice);
      const std::string label = spec + " reduce max " + std::string(to_string(dtype)) + " to " + std::to_string(root);
      if (!run_or_skip(label, [&] {
            comm.reduce({din.p, count, dtype, Memory::cuda, device}, {dout.p, count, dtype, Memory::cuda, device},
                        ReduceOp::max, root, {.timeout_seconds = 120});
          }))
        return;
      if (rank == root) {
        std::vector<std::byte> got(bytes);
        cudaMemcpy(got.data(), dout.p, bytes, cudaMemcpyDeviceToHost);
        every_rank_check(matches(got, want, dtype), label + ": wrong on the root");
      } else {
        every_rank_check(true, label);
      }
    }
  }
}

// reduce_scatter and all_gather on CUDA tensors (flat: the spec's first
// level over every rank): empty and odd blocks, every op on one dtype per
// width class, in and out of place; for the staged specs (xring) also
// blocks of more than one staging chunk (4 MiB).
void blockwise_cases(Communicator& comm, const std::string& spec, int device) {
  const std::vector<DataType> dtypes = {DataType::f32, DataType::bf16, DataType::i8, DataType::i64};
  const ReduceOp ops[] = {ReduceOp::sum, ReduceOp::mean, ReduceOp::min, ReduceOp::max, ReduceOp::prod};
  const std::size_t n = std::size_t(size);
  const bool staged = spec.find("xring") != std::string::npos;
  for (const std::size_t block : {std::size_t(0), std::size_t(1031), std::size_t(1200007)})
    for (DataType dtype : dtypes) {
      if (block > 10000 && (core || !staged || dtype != DataType::f32)) continue;
      const std::size_t e = dtype_size(dtype), whole = block * n;
      for (ReduceOp op : ops) {
        if (block > 10000 && op != ReduceOp::sum) continue;
        const std::vector<std::byte>& want = reference(dtype, whole, op, false);
        const auto input = make_input(dtype, whole, rank, false);
        const bool in_place = (block + std::size_t(op)) % 2 == 1;
        Device din(whole * e), dout(block * e);
        cudaMemcpy(din.p, input.data(), whole * e, cudaMemcpyHostToDevice);
        void* out = in_place ? static_cast<std::byte*>(din.p) + std::size_t(rank) * block * e : dout.p;
        const std::string label = spec + " reduce_scatter " + std::string(to_string(dtype)) + " " +
                                  std::string(to_string(op)) + " block " + std::to_string(block) +
                                  (in_place ? " in place" : " out of place");
        if (!run_or_skip(label, [&] {
              comm.reduce_scatter({din.p, whole, dtype, Memory::cuda, device}, {out, block, dtype, Memory::cuda, device},
                                  op, {.timeout_seconds = 120});
            }))
          return;
        std::vector<std::byte> got(block * e), mine(want.begin() + std::ptrdiff_t(std::size_t(rank) * block * e),
                                                    want.begin() + std::ptrdiff_t(std::size_t(rank + 1) * block * e));
        cudaMemcpy(got.data(), out, block * e, cudaMemcpyDeviceToHost);
        every_rank_check(matches(got, mine, dtype), label + ": differs from the host reference");
      }
      // all_gather: every rank's input at its block, the same bits everywhere.
      std::vector<std::byte> want;
      for (int q = 0; q < size; ++q) {
        const auto theirs = make_input(dtype, block, q, false);
        want.insert(want.end(), theirs.begin(), theirs.end());
      }
      for (const bool in_place : {false, true}) {
        Device din(block * e), dout(whole * e);
        const auto input = make_input(dtype, block, rank, false);
        void* in = in_place ? static_cast<std::byte*>(dout.p) + std::size_t(rank) * block * e : din.p;
        cudaMemcpy(in, input.data(), block * e, cudaMemcpyHostToDevice);
        const std::string label = spec + " all_gather " + std::string(to_string(dtype)) + " block " +
                                  std::to_string(block) + (in_place ? " in place" : " out of place");
        if (!run_or_skip(label, [&] {
              comm.all_gather({in, block, dtype, Memory::cuda, device}, {dout.p, whole, dtype, Memory::cuda, device},
                              {.timeout_seconds = 120});
            }))
          return;
        std::vector<std::byte> got(whole * e);
        cudaMemcpy(got.data(), dout.p, whole * e, cudaMemcpyDeviceToHost);
        every_rank_check(got == want, label + ": differs from the host reference");
        every_rank_check(same_everywhere(got), label + ": differs between ranks");
      }
    }
}

// Inexact floats in every floating dtype x op: all_reduce (and, for
// psgpu, a message of several pinned rounds), reduce_scatter and reduce,
// against the plan's fold (check_plan).
void inexact_cases(Communicator& comm, const std::string& spec, int device) {
  const std::vector<DataType> dtypes = core ? std::vector<DataType>{DataType::f32, DataType::bf16}
                                            : std::vector<DataType>{DataType::f32, DataType::f64, DataType::f16,
                                                                    DataType::bf16};
  const ReduceOp ops[] = {ReduceOp::sum, ReduceOp::mean, ReduceOp::min, ReduceOp::max, ReduceOp::prod};
  const auto all_reduce = [&](DataType dtype, ReduceOp op, std::size_t count) {
    const std::size_t bytes = count * dtype_size(dtype);
    const auto& inputs = inexact_inputs(dtype, count, op);
    Device d(bytes);
    cudaMemcpy(d.p, inputs[std::size_t(rank)].data(), bytes, cudaMemcpyHostToDevice);
    const Tensor t{d.p, count, dtype, Memory::cuda, device};
    const std::string label = spec + " inexact " + std::string(to_string(dtype)) + " " + std::string(to_string(op)) +
                              " count " + std::to_string(count) + " in place";
    if (!run_or_skip(label, [&] { comm.all_reduce(t, t, op, {.timeout_seconds = 300}); })) return false;
    std::vector<std::byte> got(bytes);
    cudaMemcpy(got.data(), d.p, bytes, cudaMemcpyDeviceToHost);
    const std::string why = check_plan(comm, Collective::all_reduce, bytes, got, dtype, count, op, 0, 0, count);
    every_rank_check(why.empty(), label + ": differs from the host reference: " + why);
    every_rank_check(same_everywhere(got), label + ": differs between ranks");
    return true;
  };
  for (DataType dtype : dtypes)
    for (ReduceOp op : ops)
      if (!all_reduce(dtype, op, 4099)) return;
  // Pieces of psgpu's slices in several rounds of pinned buffers (4 MiB
  // each: 3 rounds at 2, 3 and 4 ranks, so each buffer is used again); the
  // core runs flat psgpu only.
  if (core ? spec == "psgpu" : spec.rfind("psgpu", 0) == 0)
    if (!all_reduce(DataType::f32, ReduceOp::sum, 2200003)) return;

  const std::size_t block = 1031, whole = block * std::size_t(size);
  for (DataType dtype : dtypes)
    for (ReduceOp op : ops) {
      const std::size_t e = dtype_size(dtype);
      const auto& inputs = inexact_inputs(dtype, whole, op);
      Device din(whole * e), dout(block * e);
      cudaMemcpy(din.p, inputs[std::size_t(rank)].data(), whole * e, cudaMemcpyHostToDevice);
      const std::string label = spec + " inexact reduce_scatter " + std::string(to_string(dtype)) + " " +
                                std::string(to_string(op)) + " block " + std::to_string(block);
      if (!run_or_skip(label, [&] {
            comm.reduce_scatter({din.p, whole, dtype, Memory::cuda, device}, {dout.p, block, dtype, Memory::cuda, device},
                                op, {.timeout_seconds = 120});
          }))
        return;
      std::vector<std::byte> got(block * e);
      cudaMemcpy(got.data(), dout.p, block * e, cudaMemcpyDeviceToHost);
      const std::string why = check_plan(comm, Collective::reduce_scatter, whole * e, got, dtype, whole, op, 0,
                                         std::size_t(rank) * block, block);
      every_rank_check(why.empty(), label + ": differs from the host reference: " + why);
    }

  // Reduce (sum, f32) to the last rank.
  const std::size_t count = 4099, bytes = count * 4;
  const int root = size - 1;
  const auto& inputs = inexact_inputs(DataType::f32, count, ReduceOp::sum);
  Device din(bytes), dout(bytes);
  cudaMemcpy(din.p, inputs[std::size_t(rank)].data(), bytes, cudaMemcpyHostToDevice);
  const std::string label = spec + " inexact reduce f32 sum to " + std::to_string(root);
  if (!run_or_skip(label, [&] {
        comm.reduce({din.p, count, DataType::f32, Memory::cuda, device}, {dout.p, count, DataType::f32, Memory::cuda, device},
                    ReduceOp::sum, root, {.timeout_seconds = 120});
      }))
    return;
  std::string why;
  if (rank == root) {
    std::vector<std::byte> got(bytes);
    cudaMemcpy(got.data(), dout.p, bytes, cudaMemcpyDeviceToHost);
    why = check_plan(comm, Collective::reduce, bytes, got, DataType::f32, count, ReduceOp::sum, 0, 0, count);
  }
  every_rank_check(why.empty(), label + ": differs from the host reference on the root: " + why);
}

// The started forms on CUDA tensors (they run on the caller's thread, in
// wait()): two non-blocking all-reduces outstanding at once, waited in
// reverse order, and a persistent all-reduce started twice on new data;
// inexact f32 sums (inexact_inputs' salt s: the s-th set of data).
void request_cases(Communicator& comm, const std::string& spec, int device) {
  const std::size_t count = 4099, bytes = count * 4;
  const auto input = [&](int salt) { return inexact_inputs(DataType::f32, count, ReduceOp::sum, salt)[std::size_t(rank)]; };
  const auto check = [&](const void* result, int salt, const std::string& what) {
    std::vector<std::byte> got(bytes);
    cudaMemcpy(got.data(), result, bytes, cudaMemcpyDeviceToHost);
    const std::string why =
        check_plan(comm, Collective::all_reduce, bytes, got, DataType::f32, count, ReduceOp::sum, salt, 0, count);
    every_rank_check(why.empty(), what + ": differs from the host reference: " + why);
  };
  Device a(bytes), b(bytes), out_a(bytes), out_b(bytes);
  cudaMemcpy(a.p, input(0).data(), bytes, cudaMemcpyHostToDevice);
  cudaMemcpy(b.p, input(1).data(), bytes, cudaMemcpyHostToDevice);
  const std::string label = spec + " iall_reduce x2 then all_reduce_init";
  if (!run_or_skip(label, [&] {
        Request ra = comm.iall_reduce({a.p, count, DataType::f32, Memory::cuda, device},
                                      {out_a.p, count, DataType::f32, Memory::cuda, device}, ReduceOp::sum,
                                      {.timeout_seconds = 120});
        Request rb = comm.iall_reduce({b.p, count, DataType::f32, Memory::cuda, device},
                                      {out_b.p, count, DataType::f32, Memory::cuda, device}, ReduceOp::sum,
                                      {.timeout_seconds = 120});
        rb.wait();
        ra.wait();
      }))
    return;
  check(out_a.p, 0, label + ": first request");
  check(out_b.p, 1, label + ": second request");
  Request p = comm.all_reduce_init({a.p, count, DataType::f32, Memory::cuda, device},
                                   {out_a.p, count, DataType::f32, Memory::cuda, device}, ReduceOp::sum,
                                   {.timeout_seconds = 120});
  for (int salt : {2, 3}) {
    cudaMemcpy(a.p, input(salt).data(), bytes, cudaMemcpyHostToDevice);
    p.start();
    p.wait();
    check(out_a.p, salt, label + ": persistent run " + std::to_string(salt));
  }
}

}  // namespace

int main(int argc, char** argv) {
  const auto start = gpu_test::start_program(&argc, &argv, "test_gpu_collectives");
  core = argc > 1 && std::string(argv[1]) == "--core";
  rank = start.rank;
  size = start.size;
  for (const std::string& spec : gpu_test::gpu_specs(gpu_test::Breadth::every_host_level)) {
    Communicator comm(MPI_COMM_WORLD, Config{spec, 0});
    const int device = comm.topology().ranks[std::size_t(rank)].gpu.cuda_device;
    cudaSetDevice(device);  // the test's buffers live on the rank's device
    if (rank == 0)
      std::printf("spec %s: all_reduce of 1 MiB runs %s\n", spec.c_str(),
                  comm.algorithm_for(1 << 20, Collective::all_reduce, Memory::cuda).c_str());
    const int before = skipped;
    all_reduce_cases(comm, spec, device);
    if (stages_on_host(spec, core)) large_case(comm, spec, device);
    f16_mean_overflow_case(comm, spec, device);
    rooted_cases(comm, spec, device);
    blockwise_cases(comm, spec, device);
    inexact_cases(comm, spec, device);
    request_cases(comm, spec, device);
    if (spec == "auto")
      every_rank_check(skipped == before, "auto must never be refused (the plan follows the control plane's verdicts)");
  }
  if (rank == 0) std::printf("%d skipped (Unavailable, same on every rank)\n",
                             skipped);
  return gpu_test::end_program();
}
