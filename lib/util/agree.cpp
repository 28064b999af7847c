#include "util/agree.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstring>

#include "strata/errors.hpp"
#include "util/abandoned.hpp"
#include "util/check.hpp"
#include "util/where.hpp"

namespace strata::util {

// What the lowest failing rank broadcasts: its kind, where it runs
// ("host:rank") and its reason (truncated).
struct Agreement::Verdict {
  int kind = 0;
  std::array<char, 124> where{};
  std::array<char, 1020> reason{};
};

// Every buffer an MPI operation of the agreement reads or writes. It lives
// on the heap, owned by the agreement, and is leaked rather than freed when
// the agreement is given up with operations in flight (a bounded collective
// given up at its bound may still complete later).
struct Agreement::Buffers {
  int notice = 0;  // what this rank's failure notices carry (its kind)
  int mine = 0;    // this rank's flag: failed or not
  std::vector<int> flags;
  std::vector<int> notices;
  Verdict verdict;
};

Agreement::Agreement(MPI_Comm comm, std::string step, const Deadline& bound)
    : comm_(comm), step_(std::move(step)), bound_(bound), buffers_(std::make_unique<Buffers>()) {
  STRATA_CHECK_MPI(MPI_Comm_rank(comm_, &rank_));
  STRATA_CHECK_MPI(MPI_Comm_size(comm_, &size_));
  buffers_->flags.assign(static_cast<std::size_t>(size_), 0);
  buffers_->notices.assign(static_cast<std::size_t>(size_), 0);
}

Agreement::~Agreement() {
  int finalized = 0;
  if (MPI_Finalized(&finalized) != MPI_SUCCESS || finalized) return;
  // Given up with operations in flight: point-to-point ones (the notices)
  // are released to complete on their own; a collective's request may not
  // be freed (MPI forbids it), so its handle is left behind. Either way the
  // buffers stay: MPI may still use them.
  bool in_flight = false;
  for (MPI_Request& r : sends_)
    if (r != MPI_REQUEST_NULL) MPI_Request_free(&r), in_flight = true;
  for (MPI_Request& r : pending_)
    if (r != MPI_REQUEST_NULL) {
      if (!collective_) MPI_Request_free(&r);
      in_flight = true;
    }
  if (in_flight) {
    util::keep_forever(buffers_.release());  // MPI may still write into them
    util::abandoned_operations_on(comm_);   // and still use the communicator
  }
}

void Agreement::fail(Kind kind, std::string reason) {
  if (failed_) return;
  failed_ = true;
  kind_ = kind;
  reason_ = std::move(reason);
  buffers_->notice = static_cast<int>(kind);
  for (int peer = 0; peer < size_; ++peer) {
    if (peer == rank_) continue;
    MPI_Request request = MPI_REQUEST_NULL;
    STRATA_CHECK_MPI(MPI_Isend(&buffers_->notice, 1, MPI_INT, peer, kAgreementTag, comm_, &request));
    sends_.push_back(request);
  }
}

bool Agreement::peer_failed() {
  int flag = 0;
  STRATA_CHECK_MPI(MPI_Iprobe(MPI_ANY_SOURCE, kAgreementTag, comm_, &flag, MPI_STATUS_IGNORE));
  return flag != 0;
}

void Agreement::wait(const char* what) {
  Backoff backoff;
  for (;;) {
    int done = 0;
    STRATA_CHECK_MPI(MPI_Testall(static_cast<int>(pending_.size()), pending_.data(), &done, MPI_STATUSES_IGNORE));
    if (done) {
      pending_.clear();
      return;
    }
    if (bound_.expired())
      throw DeadlineExceeded(fmt::format("strata [{}]: {} did not finish within its own limit of {} s: {} did not "
                                         "complete on every rank (a rank is missing or stuck)",
                                         where(), step_, bound_.seconds(), what),
                             {});
    backoff.pause();
  }
}

std::optional<Agreement::Failure> Agreement::conclude() {
  Buffers& b = *buffers_;
  // Who failed: one flag per member.
  b.mine = failed_ ? 1 : 0;
  pending_.assign(1, MPI_REQUEST_NULL);
  collective_ = true;
  STRATA_CHECK_MPI(MPI_Iallgather(&b.mine, 1, MPI_INT, b.flags.data(), 1, MPI_INT, comm_, pending_.data()));
  wait("the exchange of outcomes");
  collective_ = false;

  // Take in the notices the failing members sent me, and finish mine.
  for (int peer = 0; peer < size_; ++peer)
    if (peer != rank_ && b.flags[static_cast<std::size_t>(peer)]) {
      pending_.push_back(MPI_REQUEST_NULL);
      STRATA_CHECK_MPI(MPI_Irecv(&b.notices[static_cast<std::size_t>(peer)], 1, MPI_INT, peer, kAgreementTag, comm_,
                                 &pending_.back()));
    }
  pending_.insert(pending_.end(), sends_.begin(), sends_.end());
  sends_.clear();
  wait("the failure notices");

  const auto first = std::find(b.flags.begin(), b.flags.end(), 1);
  if (first == b.flags.end()) return std::nullopt;
  const int root = static_cast<int>(first - b.flags.begin());
  if (root == rank_) {
    b.verdict.kind = static_cast<int>(kind_);
    const std::string here = where();
    std::memcpy(b.verdict.where.data(), here.data(), std::min(here.size(), b.verdict.where.size() - 1));
    // Its own location leads the text every member raises: not twice.
    const std::string_view reason = unlocated(reason_);
    std::memcpy(b.verdict.reason.data(), reason.data(), std::min(reason.size(), b.verdict.reason.size() - 1));
  }
  pending_.assign(1, MPI_REQUEST_NULL);
  collective_ = true;
  STRATA_CHECK_MPI(MPI_Ibcast(&b.verdict, sizeof b.verdict, MPI_BYTE, root, comm_, pending_.data()));
  wait("the failing rank's reason");
  collective_ = false;
  return Failure{root, static_cast<Kind>(b.verdict.kind), std::string(b.verdict.reason.data()),
                 std::string(b.verdict.where.data())};
}

void Agreement::throw_if_failed() {
  const std::optional<Failure> failure = conclude();
  if (!failure) return;
  // The failing rank's location: the same text on every member.
  const std::string text =
      fmt::format("strata [{}]: {} failed on rank {}: {}", failure->where, step_, failure->rank, failure->reason);
  switch (failure->kind) {
    case Kind::deadline: throw DeadlineExceeded(text, {});
    case Kind::unavailable: throw Unavailable(text);
    case Kind::invalid: throw InvalidArgument(text);
    case Kind::backend: break;
  }
  throw BackendError(text, "setup", 0, hostname(), world_rank());
}

}  // namespace strata::util
