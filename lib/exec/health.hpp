// Whether one communicator can still be used, and what broke it. A timeout
// or a backend failure breaks it for good: the ranks may be out of step,
// and work given up on may still touch the buffers it was handed. Also the
// timeout's diagnosis: which ranks never arrived. Internal header.
#pragma once

#include <string>

#include "exec/roll_call.hpp"
#include "plan/job.hpp"
#include "util/deadline.hpp"
#include "strata/errors.hpp"

namespace strata::exec {

class Health {
 public:
  bool broken() const { return !reason_.empty(); }
  // Throws PeerFailure naming what broke the communicator, once broken.
  void ensure_usable() const;
  // Breaks it; `reason` is what later calls' PeerFailure names.
  void break_with(std::string reason) { reason_ = std::move(reason); }

 private:
  std::string reason_;  // empty while usable
};

// After `call` (on rank `rank` of `size`) passed `deadline`: asks every rank
// where it is (`roll_call`; null on a communicator of one rank, or where
// this thread may not call MPI: then nobody is named) and returns the
// DeadlineExceeded that names the ranks that did not arrive, apart from
// ranks still waiting in an earlier call. Collective through the roll call
// only: ranks answer from their wait loops.
DeadlineExceeded missing_ranks_error(RollCall* roll_call, const plan::CallInfo& call, int rank, int size,
                                     const util::Deadline& deadline);

}  // namespace strata::exec
