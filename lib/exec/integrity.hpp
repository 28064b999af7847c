// The end-to-end integrity check of a host call (Config::verify,
// STRATA_VERIFY=checksum; docs/RELIABILITY.md, "Integrity checks"). Before
// the call, each rank checksums what it gives (the call may overwrite its
// input in place); after, what it holds; then one small MPI all-reduce of
// a fixed-size record lets every rank judge, from the same numbers, that:
//   - every rank holding the common result holds the same bits (all_reduce,
//     broadcast, all_gather: the minimum and maximum of their hashes);
//   - a broadcast's result is the root's input, an all_gather's block r
//     rank r's input (exact hashes);
//   - a sum's (and mean's) result sums to what the ranks gave: exactly,
//     modulo 2^bits, for integers; within a stated rounding bound for
//     floating types;
//   - a min's or max's result is on the right side of every holder's own
//     input, and (all_reduce) each element equals some rank's input.
// Otherwise every rank raises Corrupted naming the call, and which ranks'
// results differ or which sum disagreed. Internal header.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "exec/execute.hpp"
#include "plan/job.hpp"
#include "util/deadline.hpp"

namespace strata::exec {

// One call's check: made before the call runs, confirmed after it.
class IntegrityCheck {
 public:
  // Checksums what this rank gives to `job` (in, out, count as a Call holds
  // them: count per block for reduce_scatter and all_gather; op may be
  // mean, divided by `contributors`). `own_copy` keeps this rank's input
  // where min or max needs it after an in-place call (grow-only, reused).
  IntegrityCheck(Collective collective, const plan::Job& job, std::size_t contributors, int rank, int size,
                 std::vector<std::byte>& own_copy);

  // After the call ran on every rank: checksums what this rank holds and
  // compares over `context`'s communicator (bounded by `deadline`). Throws
  // Corrupted, on every rank alike, naming `info`'s call; DeadlineExceeded
  // or BackendError as any collective would.
  void confirm(const HostContext& context, const util::Deadline& deadline, const plan::CallInfo& info) const;

 private:
  Collective collective_;
  plan::Job job_;
  std::size_t contributors_;
  int rank_;
  int size_;
  const void* own_ = nullptr;  // this rank's input as it was, for min and max (null: not needed)
  std::uint64_t given_hash_ = 0;
  std::uint64_t given_wrapping_ = 0;
  double given_sum_ = 0, given_magnitude_ = 0;
};

}  // namespace strata::exec
