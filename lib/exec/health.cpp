#include "exec/health.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <utility>

#include "util/where.hpp"

namespace strata::exec {

bool Health::broken() const {
  std::lock_guard lock(mutex_);
  return !reason_.empty();
}

void Health::ensure_usable() {
  std::unique_lock lock(mutex_);
  if (pending_) {
    const std::exception_ptr error = std::exchange(pending_, nullptr);
    lock.unlock();
    std::rethrow_exception(error);
  }
  if (!reason_.empty())
    throw PeerFailure(fmt::format("strata [{}]: this communicator is broken by an earlier failure ({}); "
                                  "create a new one (and check the peers) before calling again",
                                  util::where(), reason_));
}

void Health::break_with(std::string reason) {
  std::lock_guard lock(mutex_);
  reason_ = std::move(reason);
}

void Health::report(std::exception_ptr error, std::string reason, bool breaks) {
  std::lock_guard lock(mutex_);
  if (!pending_) pending_ = error;
  if (breaks && reason_.empty()) reason_ = std::move(reason);
}

DeadlineExceeded missing_ranks_error(RollCall* roll_call, const plan::CallInfo& call, int rank, int size,
                                     const util::Deadline& deadline, std::string_view unknown_why) {
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
  if (!roll_call && size > 1) who = fmt::format("which ranks did not arrive is unknown: {}", unknown_why);
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
