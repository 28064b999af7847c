// The call check: before any data moves, every rank of a communicator
// learns whether all ranks make the same call (plan::Fingerprint). On a
// one-node communicator it is one shared-memory round (or rides in the
// first round of the shared-memory all-reduce itself: exec::run_host); else
// one small non-blocking MPI all-reduce of the fingerprint's fields (min
// and max at once), plus an all-gather only when they differ, to say which
// ranks hold which value. Throws Mismatch on every rank on a difference;
// the communicator stays usable (every rank did the same communication).
#pragma once

#include "exec/execute.hpp"
#include "plan/fingerprint.hpp"

namespace strata::exec {

void verify_call(const HostContext& context, const plan::Fingerprint& mine, const util::Deadline& deadline,
                 const plan::CallInfo& info);

}  // namespace strata::exec
