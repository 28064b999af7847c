#include "exec/reproducible.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>

#include "exec/finish.hpp"
#include "exec/fixed_point.hpp"
#include "host/reduce_kernel.hpp"
#include "host/reduce_simd.hpp"
#include "host/shm_direct.hpp"
#include "host/shm_segment.hpp"
#include "host/transport.hpp"
#include "plan/collective.hpp"
#include "strata/errors.hpp"
#include "util/half.hpp"
#include "util/where.hpp"

namespace strata::exec {
namespace {

// Workspace slots of the transforms: the algorithms use slots below 96 and
// the hierarchical driver slot 96 (execute.cpp).
constexpr std::size_t kWideInSlot = 100, kWideOutSlot = 101, kCodesSlot = 102, kFixedSlot = 103,
                      kFixedOutSlot = 104, kKindsSlot = 105, kKindsOutSlot = 106;


// Elements per step of the gathered f32 fold: its two f32 blocks stay in
// the L1 cache.
constexpr std::size_t kFoldStep = 1024;

// One instruction set's copy of the conversions around the f32
// accumulation (the compiler vectorises the bf16 loops; f16's, branchy
// without F16C, stay element by element). Integer work only: every copy
// gives the same bits.
#define STRATA_WIDEN_KERNELS(isa, target)                                                          \
  target void widen_##isa(const void* in, std::size_t count, DataType dtype, float* out) {          \
    const auto* halves = static_cast<const std::uint16_t*>(in);                                    \
    if (dtype == DataType::f16)                                                                    \
      for (std::size_t i = 0; i < count; ++i) out[i] = util::f16_to_f32(halves[i]);                \
    else                                                                                           \
      for (std::size_t i = 0; i < count; ++i) out[i] = util::bf16_to_f32(halves[i]);               \
  }                                                                                                \
  target void narrow_##isa(const float* in, std::size_t count, DataType dtype, void* out) {         \
    auto* halves = static_cast<std::uint16_t*>(out);                                               \
    if (dtype == DataType::f16)                                                                    \
      for (std::size_t i = 0; i < count; ++i) halves[i] = util::f32_to_f16(in[i]);                 \
    else                                                                                           \
      for (std::size_t i = 0; i < count; ++i) halves[i] = util::f32_to_bf16(in[i]);                \
  }                                                                                                \
  target void fold_##isa(const void* const* operands, int n, std::size_t count, DataType dtype,     \
                         std::size_t divisor, void* out) {                                         \
    alignas(64) float acc[kFoldStep], wide[kFoldStep];                                             \
    for (std::size_t at = 0; at < count; at += kFoldStep) {                                        \
      const std::size_t k = std::min(kFoldStep, count - at);                                       \
      widen_##isa(static_cast<const std::uint16_t*>(operands[0]) + at, k, dtype, acc);             \
      for (int r = 1; r < n; ++r) {                                                                \
        widen_##isa(static_cast<const std::uint16_t*>(operands[r]) + at, k, dtype, wide);          \
        for (std::size_t i = 0; i < k; ++i) acc[i] += wide[i];                                     \
      }                                                                                            \
      if (divisor > 1) host::divide_by(acc, k, DataType::f32, divisor); /* (the finish stage's) */ \
      narrow_##isa(acc, k, dtype, static_cast<std::uint16_t*>(out) + at);                          \
    }                                                                                              \
  }

STRATA_WIDEN_KERNELS(baseline, )
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
STRATA_WIDEN_KERNELS(avx2, __attribute__((target("avx2"))))
STRATA_WIDEN_KERNELS(avx512, __attribute__((target("avx2,avx512f,avx512bw,avx512vl"))))
#endif

struct Conversions {
  void (*widen)(const void*, std::size_t, DataType, float*);
  void (*narrow)(const float*, std::size_t, DataType, void*);
  // out[i] = narrow(widen(operands[0][i]) + ... + widen(operands[n-1][i]),
  // in rank order, divided by `divisor` when above 1): the widened plan's
  // canonical fold and finish on one rank that holds every contribution.
  void (*fold)(const void* const*, int, std::size_t, DataType, std::size_t, void*);
};

// The copy for the instruction set the reduction kernels run.
const Conversions& conversions() {
  static const Conversions chosen = [] {
    [[maybe_unused]] const host::simd::Copy copy = host::simd::chosen_copy();
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    if (copy == host::simd::Copy::avx512) return Conversions{&widen_avx512, &narrow_avx512, &fold_avx512};
    if (copy == host::simd::Copy::avx2) return Conversions{&widen_avx2, &narrow_avx2, &fold_avx2};
#endif
    return Conversions{&widen_baseline, &narrow_baseline, &fold_baseline};
  }();
  return chosen;
}

// A transform's sum over every rank's contribution at once, as a
// reduction the node's gathered collectives run: `sum` is
// fixed_point::sum_gathered (exact) or Conversions::fold (widened).
using SumAtOnce = void (*)(const void* const* operands, int n, std::size_t count, DataType dtype,
                           std::size_t divisor, void* out);
class GatheredSum final : public host::shm::direct::GatheredReduction {
 public:
  GatheredSum(SumAtOnce sum, DataType dtype, std::size_t divisor) : sum_(sum), dtype_(dtype), divisor_(divisor) {}
  void reduce(const std::byte* const* operands, int n, std::size_t count, std::byte* out) const override {
    sum_(reinterpret_cast<const void* const*>(operands), n, count, dtype_, divisor_, out);
  }

 private:
  SumAtOnce sum_;
  DataType dtype_;
  std::size_t divisor_;
};

// Whether a transform runs gathered on the node: its plan runs flat over
// shared memory (a one-node communicator) and every rank can read every
// other's memory. Each rank then sums its part of every contribution
// itself (exact: fixed_point::sum_gathered; widened: the f32 fold), and
// only the contributions and the results cross between ranks: the same
// bits as the transform around the plan, less traffic.
bool runs_gathered(const plan::Choice& choice, const HostContext& context) {
  return choice.shared_memory && choice.shape == plan::Shape::flat && context.segment &&
         context.segment->peers_readable();
}

// Mode order's canonical plan (plan::canonical_choice) runs over messages,
// since the shared-memory rounds fold an owner's own slice first; the
// widened fold folds in rank order, as that plan does, so a one-node
// communicator whose ranks read each other's memory runs it gathered too.
bool runs_gathered_in_order(const HostContext& context) {
  return context.numerics.reproducible == plan::Reproducible::order && context.segment &&
         context.segment->local_size() == context.size && context.segment->peers_readable();
}

// A transform's work where runs_gathered (collective: a reducing one),
// by `sum`.
void run_gathered(Collective collective, const plan::Job& job, const host::shm::direct::GatheredReduction& sum,
                  const HostContext& context, const util::Deadline& deadline, const plan::CallInfo& info,
                  const plan::Fingerprint* check) {
  host::Transport transport(context.comm, context.rank, context.size, deadline, info, *context.workspace,
                            context.landing);
  transport.set_check(check);
  host::ShmSegment& segment = *context.segment;
  switch (collective) {
    case Collective::all_reduce:
      host::shm::direct::all_reduce_gathered(transport, segment, job.in, job.out, job.count, job.element_bytes(), sum);
      return;
    case Collective::reduce_scatter:
      host::shm::direct::reduce_scatter_gathered(transport, segment, job.in, job.out, job.count, job.element_bytes(),
                                                 sum);
      return;
    case Collective::reduce:
      host::shm::direct::reduce_gathered(transport, segment, job.in, job.out, job.count, job.element_bytes(),
                                         job.root, sum);
      return;
    case Collective::broadcast:
    case Collective::all_gather: return;  // (not reductions: never here)
  }
}

template <typename T>
T* scratch(const HostContext& context, std::size_t slot, std::size_t count) {
  return reinterpret_cast<T*>(context.workspace->get(slot, count * sizeof(T)));
}

}  // namespace

std::size_t input_count(Collective collective, const plan::Job& job, int size) {
  return collective == Collective::reduce_scatter ? job.count * static_cast<std::size_t>(size) : job.count;
}

void run_widened(Collective collective, const plan::Choice& choice, const plan::Job& job, std::size_t contributors,
                 const HostContext& context, const util::Deadline& deadline, const plan::CallInfo& info,
                 const plan::Fingerprint* check) {
  if (runs_gathered(choice, context) || runs_gathered_in_order(context))
    return run_gathered(collective, job,
                        GatheredSum(conversions().fold, job.dtype, job.op == ReduceOp::mean ? contributors : 1),
                        context, deadline, info, check);
  const bool holds = plan::holds_reduction(collective, context.rank, job.root);
  const std::size_t in_count = input_count(collective, job, context.size);
  float* wide_in = scratch<float>(context, kWideInSlot, in_count);
  conversions().widen(job.in, in_count, job.dtype, wide_in);
  plan::Job wide = job;
  wide.in = wide_in;
  wide.out = holds ? scratch<float>(context, kWideOutSlot, job.count) : nullptr;
  wide.dtype = DataType::f32;
  wide.op = job.op == ReduceOp::mean ? ReduceOp::sum : job.op;
  run_host_plan(collective, choice, wide, context, deadline, info, check);
  finish_host(job.op, wide, holds, contributors);  // a mean divides in f32, before the one rounding
  if (holds) conversions().narrow(static_cast<const float*>(wide.out), job.count, job.dtype, job.out);
}

void run_exact(Collective collective, const plan::Choice& choice, const plan::Job& job, std::size_t contributors,
               const HostContext& context, const util::Deadline& deadline, const plan::CallInfo& info,
               const plan::Fingerprint* check) {
  if (contributors > fixed_point::kMaxContributors)
    throw Unavailable(fmt::format("strata [{}]: {} #{}: reproducible mode exact sums at most {} contributions "
                                  "exactly, and this call has {}; use mode order",
                                  util::where(), info.collective, info.sequence, fixed_point::kMaxContributors,
                                  contributors));
  const std::size_t divisor = job.op == ReduceOp::mean ? contributors : 1;
  if (runs_gathered(choice, context))
    return run_gathered(collective, job, GatheredSum(&fixed_point::sum_gathered, job.dtype, divisor), context,
                        deadline, info, check);
  const bool holds = plan::holds_reduction(collective, context.rank, job.root);
  const std::size_t in_count = input_count(collective, job, context.size);
  const std::size_t words = fixed_point::words(job.dtype);

  // Every element's scale: the largest any rank holds (the call check rides here).
  std::int8_t* codes = scratch<std::int8_t>(context, kCodesSlot, in_count);
  fixed_point::measure(job.in, in_count, job.dtype, codes);
  plan::Job scales = job;
  scales.in = scales.out = codes;
  scales.count = in_count;
  scales.dtype = DataType::i8;
  scales.op = ReduceOp::max;
  run_host_plan(Collective::all_reduce, choice, scales, context, deadline, info, check);

  // The integer sums, on the call's own plan; infinities and NaNs counted
  // beside them where any rank holds one.
  const bool non_finite = fixed_point::any_non_finite(codes, in_count);
  std::int64_t* fixed = scratch<std::int64_t>(context, kFixedSlot, in_count * words);
  std::int64_t* kinds = non_finite ? scratch<std::int64_t>(context, kKindsSlot, in_count) : nullptr;
  fixed_point::encode(job.in, in_count, job.dtype, codes, fixed, kinds);
  plan::Job sums = job;
  sums.in = fixed;
  sums.out = holds ? scratch<std::int64_t>(context, kFixedOutSlot, job.count * words) : nullptr;
  sums.count = job.count * words;
  sums.dtype = DataType::i64;
  sums.op = ReduceOp::sum;
  run_host_plan(collective, choice, sums, context, deadline, info, nullptr);
  plan::Job kind_sums = sums;
  if (non_finite) {
    kind_sums.in = kinds;
    kind_sums.out = holds ? scratch<std::int64_t>(context, kKindsOutSlot, job.count) : nullptr;
    kind_sums.count = job.count;
    run_host_plan(collective, choice, kind_sums, context, deadline, info, nullptr);
  }
  if (!holds) return;
  // reduce_scatter: this rank's block of the agreed scales.
  const std::size_t first = collective == Collective::reduce_scatter ? job.count * static_cast<std::size_t>(context.rank) : 0;
  fixed_point::decode(static_cast<const std::int64_t*>(sums.out),
                      non_finite ? static_cast<const std::int64_t*>(kind_sums.out) : nullptr, codes + first, job.count,
                      job.dtype, divisor, job.out);
}

}  // namespace strata::exec
