#include "exec/roll_call.hpp"

#include <algorithm>

#include "util/abandoned.hpp"
#include "util/check.hpp"

namespace strata::exec {
namespace {

constexpr int kQuestion = 1, kAnswer = 2;

}  // namespace

RollCall::RollCall(MPI_Comm comm, const std::atomic<std::uint64_t>* current_call) : current_(current_call) {
  STRATA_CHECK_MPI(MPI_Comm_dup(comm, &comm_));
  try {  // the destructor does not run for a constructor that throws
    STRATA_CHECK_MPI(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
    STRATA_CHECK_MPI(MPI_Comm_rank(comm_, &rank_));
    STRATA_CHECK_MPI(MPI_Comm_size(comm_, &size_));
  } catch (...) {
    MPI_Comm_free(&comm_);  // (already failing: its own error would say less)
    throw;
  }
  asked_by_.assign(static_cast<std::size_t>(size_), 0);
}

RollCall::~RollCall() {
  // Never throws: a failure to free leaves nothing else to undo.
  int finalized = 0;
  if (MPI_Finalized(&finalized) == MPI_SUCCESS && !finalized) util::free_comm(comm_);
}

void RollCall::keep_communicator() noexcept { util::abandoned_operations_on(comm_); }

void RollCall::run() {
  std::unique_lock lock(mutex_, std::try_to_lock);
  if (lock.owns_lock()) answer();
}

void RollCall::answer() {
  for (;;) {
    int pending = 0;
    MPI_Status status;
    if (MPI_Iprobe(MPI_ANY_SOURCE, kQuestion, comm_, &pending, &status) != MPI_SUCCESS || !pending) return;
    std::uint64_t asked = 0;
    if (MPI_Recv(&asked, 1, MPI_UINT64_T, status.MPI_SOURCE, kQuestion, comm_, MPI_STATUS_IGNORE) != MPI_SUCCESS)
      return;  // no question to answer: the asker hears nothing from us, as from a rank that is gone
    std::uint64_t& latest = asked_by_[static_cast<std::size_t>(status.MPI_SOURCE)];
    latest = std::max(latest, asked);
    answers_.push_back({asked, current_->load(std::memory_order_relaxed)});
    MPI_Request request;
    if (MPI_Isend(answers_.back().data(), 2, MPI_UINT64_T, status.MPI_SOURCE, kAnswer, comm_, &request) ==
        MPI_SUCCESS)
      MPI_Request_free(&request);  // a tiny eager message; its buffer lives in answers_
  }
}

RollCall::Result RollCall::ask(std::uint64_t sequence) {
  std::lock_guard lock(mutex_);
  questions_.push_back(sequence);
  const std::size_t first = replies_.size();
  replies_.resize(first + static_cast<std::size_t>(size_));
  auto reply = [&](int r) -> std::array<std::uint64_t, 2>& { return replies_[first + static_cast<std::size_t>(r)]; };
  std::vector<MPI_Request> receives(static_cast<std::size_t>(size_), MPI_REQUEST_NULL);
  std::vector<bool> answered(static_cast<std::size_t>(size_), false);
  answered[static_cast<std::size_t>(rank_)] = true;
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    // Earlier answers meant for an earlier question of ours are matched
    // and skipped below by their call number. A receive MPI refuses leaves
    // the rank silent.
    if (MPI_Irecv(reply(r).data(), 2, MPI_UINT64_T, r, kAnswer, comm_, &receives[r]) != MPI_SUCCESS) {
      receives[r] = MPI_REQUEST_NULL;
      continue;
    }
    MPI_Request question;
    if (MPI_Isend(&questions_.back(), 1, MPI_UINT64_T, r, kQuestion, comm_, &question) == MPI_SUCCESS)
      MPI_Request_free(&question);
  }
  const auto started = std::chrono::steady_clock::now();
  const auto until = started + kWindow;
  util::Backoff backoff;
  for (;;) {
    answer();  // peers asking at the same time must hear from us too
    bool progressed = false;
    for (int r = 0; r < size_; ++r) {
      if (answered[r] || receives[r] == MPI_REQUEST_NULL) continue;
      int done = 0;
      if (MPI_Test(&receives[r], &done, MPI_STATUS_IGNORE) != MPI_SUCCESS || !done) continue;
      if (reply(r)[0] == sequence) {
        answered[r] = true;
        progressed = true;
      } else if (MPI_Irecv(reply(r).data(), 2, MPI_UINT64_T, r, kAnswer, comm_, &receives[r]) != MPI_SUCCESS) {
        receives[r] = MPI_REQUEST_NULL;  // a stale answer, and no receive for the next: silent from here on
      }
    }
    const bool all = std::all_of(answered.begin(), answered.end(), [](bool a) { return a; });
    if (all || std::chrono::steady_clock::now() >= until) break;
    if (progressed) backoff.reset();
    backoff.pause();
  }
  // Ranks that answered from this call time out too and ask us: stay to
  // answer them (a slightly later asker would otherwise find us gone and
  // blame us), for at most kLinger more.
  const auto waiting_to_be_asked = [&] {
    for (int r = 0; r < size_; ++r)
      if (r != rank_ && answered[r] && reply(r)[1] == sequence && asked_by_[static_cast<std::size_t>(r)] < sequence)
        return true;
    return false;
  };
  backoff.reset();
  while (waiting_to_be_asked() && std::chrono::steady_clock::now() < until + kLinger) {
    answer();
    backoff.pause();
  }
  Result result;
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    if (!answered[r]) {
      result.silent.push_back(r);
      // Give the receive up; should MPI refuse, the request only stays
      // allocated (its buffer lives in replies_).
      if (receives[r] != MPI_REQUEST_NULL && MPI_Cancel(&receives[r]) == MPI_SUCCESS) MPI_Request_free(&receives[r]);
    } else if (reply(r)[1] < sequence) {
      result.earlier.push_back(r);
    }  // a rank answering from a later call is done with this one: neither
  }
  return result;
}

}  // namespace strata::exec
