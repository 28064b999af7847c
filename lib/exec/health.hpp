// Whether one communicator can still be used, and what broke it. A timeout
// or a backend failure breaks it for good: the ranks may be out of step,
// and work given up on may still touch the buffers it was handed. A failure
// found after its call returned (stream-ordered GPU work, a call run on the
// progress thread) has no call to raise it: its error waits here for the
// next call or Communicator::check(). Any thread. Also the timeout's
// diagnosis: which ranks never arrived. Internal header.
#pragma once

#include <exception>
#include <mutex>
#include <string>
#include <string_view>

#include "exec/roll_call.hpp"
#include "plan/job.hpp"
#include "util/deadline.hpp"
#include "strata/errors.hpp"

namespace strata::exec {

class Health {
 public:
  bool broken() const;
  // Throws, once, the error report() left (its own type and text); then,
  // once broken, PeerFailure naming what broke the communicator.
  void ensure_usable();
  // Breaks it; `reason` is what later calls' PeerFailure names (a later,
  // more precise diagnosis of the same failure replaces an earlier one).
  void break_with(std::string reason);
  // A failure found after its call returned: ensure_usable() raises `error`
  // once; `breaks`: it also breaks the communicator with `reason` (a
  // timeout, a backend failure; a Mismatch leaves it usable). A second
  // report before the first was raised keeps the first.
  void report(std::exception_ptr error, std::string reason, bool breaks);

 private:
  mutable std::mutex mutex_;
  std::string reason_;        // empty while usable
  std::exception_ptr pending_;  // what the next ensure_usable() raises
};

// After `call` (on rank `rank` of `size`) passed `deadline`: asks every rank
// where it is (`roll_call`; null on a communicator of one rank, or where
// this thread may not call MPI: then nobody is named) and returns the
// DeadlineExceeded that names the ranks that did not arrive, apart from
// ranks still waiting in an earlier call. Collective through the roll call
// only: ranks answer from their wait loops.
// `unknown_why` says why nobody could be asked where `roll_call` is null
// on several ranks.
DeadlineExceeded missing_ranks_error(RollCall* roll_call, const plan::CallInfo& call, int rank, int size,
                                     const util::Deadline& deadline, std::string_view unknown_why);

}  // namespace strata::exec
