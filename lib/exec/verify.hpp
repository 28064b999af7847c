// The call check: before any data moves, every rank of a communicator
// learns whether all ranks make the same call (plan::Fingerprint). On a
// one-node communicator it is one shared-memory round (or rides in the
// first round of the shared-memory all-reduce itself: exec::run_host); else
// one MPI all-reduce of a CheckRecord (the fingerprint's fields as maxima
// and minima, exec/check_record.hpp), plus an all-gather only when they
// differ, to say which ranks hold which value. Throws Mismatch on every
// rank on a difference; the communicator stays usable (every rank did the
// same communication).
#pragma once

#include "exec/execute.hpp"
#include "plan/fingerprint.hpp"
#include "plan/job.hpp"
#include "strata/types.hpp"

namespace strata::exec {

// A call whose data may travel in the check's record: an all-reduce, a
// reduce or a broadcast (job.op not mean) under MPI's own collective, or an
// all-gather under any plan (job.count one block, job.out every block).
struct CarriedCall {
  Collective collective = Collective::all_reduce;
  const plan::Job* job = nullptr;
};

// Collective over context.comm. `carry`: a call whose data may travel in
// the check's record. It does where the check runs over MPI
// (checks_over_mpi) and the data fits (kCarriedBytes; an all-gather's
// whole output); then the function returns true with the call done: the
// result in job->out on every rank that receives one (all of them; a
// reduce's root; a broadcast's others),
// written only after every rank was found to agree. Otherwise it returns
// false and the call runs its plan.
bool verify_call(const HostContext& context, const plan::Fingerprint& mine, const util::Deadline& deadline,
                 const plan::CallInfo& info, const CarriedCall* carry = nullptr);

// Whether this communicator's check is an MPI all-reduce (several nodes, or
// ranks without a shared-memory segment) rather than a shared-memory round.
bool checks_over_mpi(const HostContext& context);

}  // namespace strata::exec
