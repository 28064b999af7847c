// The record the call check all-reduces over MPI (several nodes, or no
// shared-memory segment): the fingerprint's digest as a maximum and a
// minimum (equal, when every rank made the same call) and room for a small
// call's data. The data rides along when the plan is MPI's own collective
// (plan::Algorithm::carried_by_check): then the check's one MPI all-reduce
// is also the call's (an all-reduce, a reduce whose root keeps the result,
// a broadcast whose root's data is copied to all; an all-gather whatever
// its plan, since gathering does no arithmetic), and a small call across
// nodes costs one round instead of two. Every rank all-reduces the same record
// shape whatever it carries, so ranks that disagree still make matching MPI
// calls and learn of it. Internal header.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>

#include "plan/algorithm.hpp"
#include "plan/fingerprint.hpp"
#include "plan/job.hpp"

namespace strata::exec {

// The most data a record carries: a call of more bytes runs its plan after
// the check. Every check over MPI moves a whole record.
constexpr std::size_t kCarriedBytes = plan::kCheckCarriesBytes;

// The op of a broadcast's record: the data is copied from the one rank that
// has it (the root), not combined.
constexpr std::int32_t kCopiedOp = -1;
// The op of an all-gather's record: every rank's block sits at its own
// place in an otherwise zero record, and records combine byte by byte with
// a bitwise or (a copy: no arithmetic, so any plan gives these bits).
constexpr std::int32_t kGatheredOp = -2;

struct CheckRecord {
  // The maxima over ranks of the fingerprint's digest and of its
  // complement: equal maximum and minimum mean every rank made the same
  // call (plan::digest mixes every field in).
  std::uint64_t digest_max;
  std::uint64_t complement_max;
  std::uint64_t count;    // elements carried (0: none); all ones once two ranks' records disagree
  std::int32_t dtype;     // DataType of the carried elements
  std::int32_t op;        // ReduceOp (never mean: the finish stage divides), or kCopiedOp
  std::uint32_t sources;  // ranks whose data is in `data`
  alignas(16) std::byte data[kCarriedBytes];
};

// What this rank puts in a record: `count` elements of `dtype` combined
// with `op` (a ReduceOp, not mean), copied (kCopiedOp) or gathered
// (kGatheredOp); `data` null when the rank contributes none (a broadcast's
// other ranks).
struct Carried {
  const void* data = nullptr;
  std::size_t count = 0;  // count * element size <= kCarriedBytes
  DataType dtype = DataType::f32;
  std::int32_t op = 0;
  // kGatheredOp: `data` is this rank's block of `block_bytes`, placed
  // `block_bytes * rank` bytes into the record's `count` elements.
  std::size_t block_bytes = 0;
  int rank = 0;
};

// The record of `mine`, carrying `carried` when it is not null.
void fill_record(CheckRecord& record, const plan::Fingerprint& mine, const Carried* carried);

// Whether every rank's fingerprint was the same, once `record` is all-reduced.
bool every_rank_agrees(const CheckRecord& record);

// The MPI datatype (one whole record: MPI never cuts it) and the operator
// (maxima of the words, the carried data reduced with strata's own kernel)
// to all-reduce records with. Made on first use, kept until MPI_Finalize;
// thread-safe.
MPI_Datatype check_record_type();
MPI_Op check_record_op();

}  // namespace strata::exec
