#include "exec/integrity.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <string>

#include "exec/checksum.hpp"
#include "host/transport.hpp"
#include "plan/collective.hpp"
#include "util/check.hpp"
#include "util/element.hpp"
#include "util/ranges.hpp"
#include "util/slice.hpp"
#include "util/trace.hpp"
#include "util/where.hpp"
#include "strata/errors.hpp"

namespace strata::exec {
namespace {

// What every rank contributes to the one all-reduce; combined field by
// field (integrity_op), so every rank judges from the same numbers.
struct Record {
  std::uint64_t result_min;      // minimum over the ranks holding the common result of its hash (others: ~0)
  std::uint64_t result_max;      // their maximum (others: 0)
  std::uint64_t expected;        // wrapping sum: the hash the common result must have (broadcast, all_gather)
  std::uint64_t given_wrapping;  // wrapping sums over ranks: of the contributions' elements,
  std::uint64_t held_wrapping;   //   of the results' elements (each result element counted once)
  std::uint64_t violations;      // min/max elements on the wrong side of their holder's own input
  std::uint64_t equal;           // min/max elements equal to their holder's own input
  double given_sum, given_magnitude, held_sum, held_magnitude;  // the floating counterparts, summed
};

// Who a rank is in a failed check, for the message (gathered only then).
struct Standing {
  std::uint64_t hash;
  std::uint64_t holds;
  std::uint64_t violations;
};

void combine(void* in, void* inout, int* len, MPI_Datatype*) {
  const auto* a = static_cast<const Record*>(in);
  auto* b = static_cast<Record*>(inout);
  for (int i = 0; i < *len; ++i, ++a, ++b) {
    b->result_min = std::min(a->result_min, b->result_min);
    b->result_max = std::max(a->result_max, b->result_max);
    b->expected += a->expected;
    b->given_wrapping += a->given_wrapping;
    b->held_wrapping += a->held_wrapping;
    b->violations += a->violations;
    b->equal += a->equal;
    b->given_sum += a->given_sum;
    b->given_magnitude += a->given_magnitude;
    b->held_sum += a->held_sum;
    b->held_magnitude += a->held_magnitude;
  }
}

// Made on first use, kept until MPI_Finalize (as the call check's).
MPI_Datatype record_type() {
  static const MPI_Datatype type = [] {
    MPI_Datatype t = MPI_DATATYPE_NULL;
    STRATA_CHECK_MPI(MPI_Type_contiguous(sizeof(Record), MPI_BYTE, &t));
    STRATA_CHECK_MPI(MPI_Type_commit(&t));
    return t;
  }();
  return type;
}

MPI_Op record_op() {
  static const MPI_Op op = [] {
    MPI_Op o = MPI_OP_NULL;
    STRATA_CHECK_MPI(MPI_Op_create(&combine, /*commute=*/1, &o));
    return o;
  }();
  return op;
}

bool floating(DataType dtype) {
  return dtype == DataType::f32 || dtype == DataType::f64 || dtype == DataType::f16 || dtype == DataType::bf16;
}

// The unit roundoff of a floating dtype (the largest relative error of one rounding).
double unit_roundoff(DataType dtype) {
  switch (dtype) {
    case DataType::f64: return 0x1p-53;
    case DataType::f16: return 0x1p-11;
    case DataType::bf16: return 0x1p-8;
    default: return 0x1p-24;
  }
}
double largest_finite(DataType dtype) {
  switch (dtype) {
    case DataType::f64: return std::numeric_limits<double>::max();
    case DataType::f16: return 65504.0;
    default: return static_cast<double>(std::numeric_limits<float>::max());  // f32, bf16
  }
}
double smallest_normal(DataType dtype) {
  switch (dtype) {
    case DataType::f64: return std::numeric_limits<double>::min();
    case DataType::f16: return 0x1p-14;
    default: return static_cast<double>(std::numeric_limits<float>::min());  // f32, bf16
  }
}

// Whether the sums of `op` on `dtype` are compared: sum, and a floating mean
// (an integer mean truncates each element: its sum is not preserved).
bool sums_checked(Collective collective, ReduceOp op, DataType dtype) {
  return plan::reduces(collective) && (op == ReduceOp::sum || (op == ReduceOp::mean && floating(dtype)));
}

bool ordered(Collective collective, ReduceOp op) {
  return plan::reduces(collective) && (op == ReduceOp::min || op == ReduceOp::max);
}

// An all_gather's block `block` with hash `hash`, as a term of the sum that
// every rank's result and the ranks' inputs must both give.
std::uint64_t block_term(std::uint64_t hash, std::size_t block) {
  return hash * (2 * block + 1) + block * 0x9e3779b97f4a7c15ULL;
}

// The elements of this rank's input.
std::size_t given_count(Collective collective, const plan::Job& job, int size) {
  return collective == Collective::reduce_scatter ? job.count * static_cast<std::size_t>(size) : job.count;
}

// Whether this rank holds the result every holder must hold alike.
bool holds_common(Collective collective, int rank, int root) {
  switch (collective) {
    case Collective::all_reduce:
    case Collective::broadcast:
    case Collective::all_gather: return true;
    case Collective::reduce: return rank == root;
    case Collective::reduce_scatter: return false;
  }
  return false;
}

// The part of this rank's result that it sums for the held sums: each
// result element counted once. An all_reduce's copies are compared by hash,
// so each rank sums its owner slice of its copy (the work spread evenly);
// a reduce's root sums all of it, a reduce_scatter's every rank its block.
util::Slice held_part(Collective collective, std::size_t count, int rank, int size, int root) {
  switch (collective) {
    case Collective::all_reduce:
      return util::owner_slice(count, static_cast<std::size_t>(size), static_cast<std::size_t>(rank));
    case Collective::reduce: return {0, rank == root ? count : 0};
    case Collective::reduce_scatter: return {0, count};
    default: return {0, 0};
  }
}

// The common result's hash (all_gather: the sum of its blocks' terms).
std::uint64_t result_hash(Collective collective, const plan::Job& job, int size) {
  const std::size_t bytes = job.bytes();
  if (collective != Collective::all_gather) return hash_bytes(job.out, bytes);
  std::uint64_t h = 0;
  for (std::size_t b = 0; b < static_cast<std::size_t>(size); ++b)
    h += block_term(hash_bytes(static_cast<const std::byte*>(job.out) + b * bytes, bytes), b);
  return h;
}

std::string hex(std::uint64_t value) { return fmt::format("{:#018x}", value); }

// "ranks 0-1 hold 0x..., rank 2 holds 0x..." over the holders in `all`.
std::string who_holds_what(const std::vector<Standing>& all) {
  std::map<std::uint64_t, std::vector<int>> by_hash;
  for (std::size_t r = 0; r < all.size(); ++r)
    if (all[r].holds) by_hash[all[r].hash].push_back(static_cast<int>(r));
  std::string text;
  for (const auto& [hash, ranks] : by_hash)
    text += fmt::format("{}rank{} {} hold{} result hash {}", text.empty() ? "" : ", ", ranks.size() > 1 ? "s" : "",
                        util::ranges(ranks), ranks.size() > 1 ? "" : "s", hex(hash));
  return text;
}

std::vector<int> ranks_with_violations(const std::vector<Standing>& all) {
  std::vector<int> ranks;
  for (std::size_t r = 0; r < all.size(); ++r)
    if (all[r].violations) ranks.push_back(static_cast<int>(r));
  return ranks;
}

}  // namespace

IntegrityCheck::IntegrityCheck(Collective collective, const plan::Job& job, std::size_t contributors, int rank,
                               int size, std::vector<std::byte>& own_copy)
    : collective_(collective), job_(job), contributors_(contributors), rank_(rank), size_(size) {
  util::trace::Span span("integrity");
  const std::size_t count = given_count(collective, job, size);
  if (collective == Collective::broadcast && rank == job.root) given_hash_ = hash_bytes(job.in, job.bytes());
  if (collective == Collective::all_gather)
    given_hash_ = block_term(hash_bytes(job.in, job.bytes()), static_cast<std::size_t>(rank));
  if (sums_checked(collective, job.op, job.dtype)) {
    const ElementSums sums = element_sums(job.in, count, job.dtype);
    given_wrapping_ = sums.wrapping;
    given_sum_ = sums.sum;
    given_magnitude_ = sums.magnitude;
  }
  if (ordered(collective, job.op) && plan::holds_reduction(collective, rank, job.root)) {
    // This rank's own part of the input, kept where the call may overwrite it.
    const std::size_t offset = collective == Collective::reduce_scatter ? job.bytes() * static_cast<std::size_t>(rank) : 0;
    const auto* own = static_cast<const std::byte*>(job.in) + offset;
    const auto* out = static_cast<const std::byte*>(job.out);
    const bool overlaps = own < out + job.bytes() && out < own + job.bytes();
    if (overlaps || collective == Collective::reduce_scatter) {
      if (own_copy.size() < job.bytes()) own_copy.resize(job.bytes());
      std::memcpy(own_copy.data(), own, job.bytes());
      own = own_copy.data();
    }
    own_ = own;
  }
}

void IntegrityCheck::confirm(const HostContext& context, const util::Deadline& deadline,
                             const plan::CallInfo& info) const {
  util::trace::Span span("integrity");
  const bool holds = holds_common(collective_, rank_, job_.root);
  const std::uint64_t hash = holds ? result_hash(collective_, job_, size_) : 0;
  const bool sums = sums_checked(collective_, job_.op, job_.dtype);

  auto* record = new (context.landing->allocate(sizeof(Record))) Record{};
  record->result_min = holds ? hash : ~std::uint64_t{0};
  record->result_max = holds ? hash : 0;
  record->expected = given_hash_;
  if (sums) {
    record->given_wrapping = given_wrapping_;
    record->given_sum = given_sum_;
    record->given_magnitude = given_magnitude_;
    const util::Slice part = held_part(collective_, job_.count, rank_, size_, job_.root);
    if (part.count > 0) {
      const ElementSums held = element_sums(static_cast<const std::byte*>(job_.out) + part.offset * job_.element_bytes(),
                                            part.count, job_.dtype);
      record->held_wrapping = held.wrapping;
      record->held_sum = held.sum;
      record->held_magnitude = held.magnitude;
    }
  }
  if (own_) {
    const OrderCheck order = check_order(own_, job_.out, job_.count, job_.dtype, job_.op);
    record->violations = order.violations;
    record->equal = order.equal;
  }
  const std::uint64_t my_violations = record->violations;

  host::Transport t(context.comm, context.rank, context.size, deadline, info, *context.workspace);
  // Non-blocking and polled with strata's backoff, also without a
  // deadline: ranks finish their checksums at different times, and MPI's
  // blocking all-reduce spins on a core the late rank may need (on 2 shared
  // cores it cost milliseconds per call; docs/PERFORMANCE.md, "Cost of the
  // integrity check").
  MPI_Request request = MPI_REQUEST_NULL;
  STRATA_CHECK_MPI(MPI_Iallreduce(MPI_IN_PLACE, record, 1, record_type(), record_op(), t.comm(), &request));
  t.wait_collective(request);

  // The verdict, from numbers every rank holds alike.
  std::vector<std::string> findings;
  const bool holders_differ = record->result_min < record->result_max;  // (none hold: ~0 against 0)
  if (holders_differ) findings.push_back("the ranks holding the result hold different bits: {holders}");
  if (!holders_differ && (collective_ == Collective::broadcast || collective_ == Collective::all_gather) &&
      record->result_max != record->expected)
    findings.push_back(fmt::format(
        "every rank holds result hash {}, but {} hash {}", hex(record->result_max),
        collective_ == Collective::broadcast ? "the root gave" : "the ranks' blocks give", hex(record->expected)));
  if (sums && !floating(job_.dtype)) {
    const std::size_t bits = util::element_bytes(job_.dtype) * 8;
    const std::uint64_t mask = bits == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << bits) - 1;
    if (((record->given_wrapping - record->held_wrapping) & mask) != 0)
      findings.push_back(fmt::format(
          "the result's elements sum to {} but the ranks' contributions to {} (wrapping, modulo 2^{})",
          record->held_wrapping & mask, record->given_wrapping & mask, bits));
  }
  if (sums && floating(job_.dtype) && std::isfinite(record->given_magnitude)) {
    const double scale = job_.op == ReduceOp::mean ? static_cast<double>(contributors_) : 1.0;
    const double u = unit_roundoff(job_.dtype), ranks = static_cast<double>(size_);
    const double n = static_cast<double>(given_count(collective_, job_, size_));
    const double given = record->given_magnitude, held = scale * record->held_magnitude;
    if (std::isfinite(record->held_magnitude)) {
      // Each result element is P - 1 roundings of the dtype away from its
      // exact sum (a mean one more), each below u times the magnitudes
      // summed; then the double sums' own error and subnormal flushes.
      const double tolerance = 1.01 * (ranks + 2) * u * given + sum_error_bound(static_cast<std::size_t>(n)) *
                                   (given + held) * (ranks + 1) +
                               n * (ranks + scale) * smallest_normal(job_.dtype);
      const double difference = std::fabs(record->given_sum - scale * record->held_sum);
      if (difference > tolerance)
        findings.push_back(fmt::format(
            "the result's elements sum to {:.17g}{} but the ranks' contributions to {:.17g}: {:.3g} apart, more "
            "than the rounding bound {:.3g}",
            scale * record->held_sum, scale != 1 ? " (times the mean's divisor)" : "", record->given_sum, difference,
            tolerance));
    } else if (given * (1 + (ranks + 2) * u) < largest_finite(job_.dtype)) {
      findings.push_back(fmt::format(
          "the result holds inf or NaN, but every contribution is finite and no element's sum can overflow (the "
          "contributions' magnitudes sum to {:.6g})",
          given));
    }
  }
  if (record->violations)
    findings.push_back(fmt::format("{} result element(s) are {} than the same element of the holding rank's own "
                                   "input (or hide its NaN): {{violators}}",
                                   record->violations, job_.op == ReduceOp::max ? "smaller" : "larger"));
  if (collective_ == Collective::all_reduce && own_ && record->equal < job_.count)
    findings.push_back(fmt::format("{} of the {} result elements are equal to no rank's input (at most)",
                                   job_.count - std::min(job_.count, static_cast<std::size_t>(record->equal)),
                                   job_.count));
  if (findings.empty()) return;

  // Rare: every rank learns every rank's standing to say who differs.
  const std::size_t size = static_cast<std::size_t>(size_);
  // (In the arena, as the record: a gather given up at the deadline may still read and write them.)
  auto* mine = new (context.landing->allocate(sizeof(Standing))) Standing{hash, holds ? 1u : 0u, my_violations};
  auto* all = reinterpret_cast<Standing*>(context.landing->allocate(size * sizeof(Standing)));
  request = MPI_REQUEST_NULL;
  STRATA_CHECK_MPI(
      MPI_Iallgather(mine, sizeof *mine, MPI_BYTE, all, sizeof *mine, MPI_BYTE, t.comm(), &request));
  t.wait_collective(request);
  const std::vector<Standing> standings(all, all + size);
  std::string text;
  for (std::string finding : findings) {
    if (const auto at = finding.find("{holders}"); at != std::string::npos)
      finding.replace(at, 9, who_holds_what(standings));
    if (const auto at = finding.find("{violators}"); at != std::string::npos)
      finding.replace(at, 11, "on rank(s) " + util::ranges(ranks_with_violations(standings)));
    text += (text.empty() ? "" : "; ") + finding;
  }
  throw Corrupted(fmt::format(
      "strata [{}]: {} #{} ({} bytes, {} {}, algorithm {}) on rank {}: the result failed the integrity check "
      "(STRATA_VERIFY=checksum): {}. Every rank raises Corrupted; its outputs of this call are unreliable (a bit "
      "flipped in memory or in transit, or a wrong reduction); the communicator stays usable",
      util::where(), info.collective, info.sequence, info.bytes, to_string(job_.dtype),
      plan::reduces(collective_) ? to_string(job_.op) : std::string_view("copy"), info.algorithm, rank_, text));
}

}  // namespace strata::exec
