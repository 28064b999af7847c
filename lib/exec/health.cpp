#include "exec/health.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <utility>

#include "util/where.hpp"

namespace strata::exec {

void Health::ensure_usable() const {
  if (!reason_.empty())
    throw PeerFailure(fmt::format("strata [{}]: this communicator is broken by an earlier failure ({}); "
                                  "create a new one (and check the peers) before calling again",
                                  util::where(), reason_));
}

DeadlineExceeded missing_ranks_error(RollCall* roll_call, const plan::CallInfo& call, int rank, int size,
                                     const util::Deadline& deadline) {
  RollCall::Result roll = roll_call ? roll_call->ask(call.sequence) : RollCall::Result{};
  std::string who;
  if (!roll.silent.empty())
    who = fmt::format("rank(s) {} did not arrive (no answer to a roll call: stopped, crashed, or busy outside strata)",
                      fmt::join(roll.silent, ","));
  // Ranks still in an earlier call are waiting there themselves (they
  // answered from a wait loop), most often on the same missing ranks:
  // named apart, never as missing.
  if (!roll.earlier.empty())
    who += fmt::format("{}rank(s) {} answered from an earlier call, waiting there themselves (not counted as missing)",
                       who.empty() ? "" : "; ", fmt::join(roll.earlier, ","));
  if (!roll_call && size > 1)
    who = "which ranks did not arrive is unknown: the call ran on the progress thread, which may not call MPI at "
          "this MPI thread level to ask them (MPI_THREAD_MULTIPLE lets it)";
  if (who.empty())
    who = "every rank answered from inside this call, so none is missing: it could not finish in time (a slow or "
          "lost link, or a disagreement the call check cannot see)";
  const std::string message = fmt::format(
      "strata [{}]: {} #{} ({} bytes, {}) on rank {} of {} exceeded its timeout of {} s; {}. The communicator is now "
      "unusable (PeerFailure); check that every rank makes the same calls in the same order, with the same timeout",
      util::where(), call.collective, call.sequence, call.bytes, call.algorithm, rank, size, deadline.seconds(), who);
  return DeadlineExceeded(message, std::move(roll.silent), std::move(roll.earlier));
}

}  // namespace strata::exec
