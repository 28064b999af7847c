#include "util/agree.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstring>

#include "strata/errors.hpp"
#include "util/check.hpp"
#include "util/where.hpp"

namespace strata::util {
namespace {

// What the lowest failing rank broadcasts: its kind and reason (truncated).
struct Verdict {
  int kind = 0;
  std::array<char, 1020> reason{};
};

}  // namespace

Agreement::Agreement(MPI_Comm comm, std::string step, const Deadline& bound)
    : comm_(comm), step_(std::move(step)), bound_(bound) {
  STRATA_CHECK_MPI(MPI_Comm_rank(comm_, &rank_));
  STRATA_CHECK_MPI(MPI_Comm_size(comm_, &size_));
}

Agreement::~Agreement() {
  // Abandoned (an exception before conclude): let the notices go on their
  // own and keep their payload alive for them.
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  bool pending = false;
  for (MPI_Request& r : sends_)
    if (r != MPI_REQUEST_NULL) {
      MPI_Request_free(&r);
      pending = true;
    }
  if (pending) (void)notice_.release();  // leaked on purpose: MPI may still read it
}

void Agreement::fail(Kind kind, std::string reason) {
  if (failed_) return;
  failed_ = true;
  kind_ = kind;
  reason_ = std::move(reason);
  notice_ = std::make_unique<int>(static_cast<int>(kind));
  for (int peer = 0; peer < size_; ++peer) {
    if (peer == rank_) continue;
    MPI_Request request = MPI_REQUEST_NULL;
    STRATA_CHECK_MPI(MPI_Isend(notice_.get(), 1, MPI_INT, peer, kAgreementTag, comm_, &request));
    sends_.push_back(request);
  }
}

bool Agreement::peer_failed() {
  int flag = 0;
  STRATA_CHECK_MPI(MPI_Iprobe(MPI_ANY_SOURCE, kAgreementTag, comm_, &flag, MPI_STATUS_IGNORE));
  return flag != 0;
}

void Agreement::wait(std::vector<MPI_Request>& requests, const char* what) {
  Backoff backoff;
  for (;;) {
    int done = 0;
    STRATA_CHECK_MPI(MPI_Testall(static_cast<int>(requests.size()), requests.data(), &done, MPI_STATUSES_IGNORE));
    if (done) return;
    if (bound_.expired())
      throw DeadlineExceeded(fmt::format("strata [{}]: {} did not finish within its own limit of {} s: {} did not "
                                         "complete on every rank (a rank is missing or stuck)",
                                         where(), step_, bound_.seconds(), what),
                             {});
    backoff.pause();
  }
}

std::optional<Agreement::Failure> Agreement::conclude() {
  concluded_ = true;
  // Who failed: one flag per member.
  int mine = failed_ ? 1 : 0;
  std::vector<int> flags(static_cast<std::size_t>(size_), 0);
  std::vector<MPI_Request> requests(1, MPI_REQUEST_NULL);
  STRATA_CHECK_MPI(MPI_Iallgather(&mine, 1, MPI_INT, flags.data(), 1, MPI_INT, comm_, requests.data()));
  wait(requests, "the exchange of outcomes");

  // Take in the notices the failing members sent me, and finish mine.
  std::vector<int> notices(static_cast<std::size_t>(size_), 0);
  requests.clear();
  for (int peer = 0; peer < size_; ++peer)
    if (peer != rank_ && flags[static_cast<std::size_t>(peer)]) {
      requests.push_back(MPI_REQUEST_NULL);
      STRATA_CHECK_MPI(MPI_Irecv(&notices[static_cast<std::size_t>(peer)], 1, MPI_INT, peer, kAgreementTag, comm_,
                                 &requests.back()));
    }
  requests.insert(requests.end(), sends_.begin(), sends_.end());
  sends_.clear();
  wait(requests, "the failure notices");

  const auto first = std::find(flags.begin(), flags.end(), 1);
  if (first == flags.end()) return std::nullopt;
  const int root = static_cast<int>(first - flags.begin());
  Verdict verdict;
  if (root == rank_) {
    verdict.kind = static_cast<int>(kind_);
    const std::size_t n = std::min(reason_.size(), verdict.reason.size() - 1);
    std::memcpy(verdict.reason.data(), reason_.data(), n);
  }
  requests.assign(1, MPI_REQUEST_NULL);
  STRATA_CHECK_MPI(MPI_Ibcast(&verdict, sizeof verdict, MPI_BYTE, root, comm_, requests.data()));
  wait(requests, "the failing rank's reason");
  return Failure{root, static_cast<Kind>(verdict.kind), std::string(verdict.reason.data())};
}

void Agreement::throw_if_failed() {
  const std::optional<Failure> failure = conclude();
  if (!failure) return;
  const std::string text = fmt::format("strata: {} failed on rank {}: {}", step_, failure->rank, failure->reason);
  switch (failure->kind) {
    case Kind::deadline: throw DeadlineExceeded(text, {});
    case Kind::unavailable: throw Unavailable(text);
    case Kind::invalid: throw InvalidArgument(text);
    case Kind::backend: break;
  }
  throw BackendError(text, "setup", 0, hostname(), world_rank());
}

}  // namespace strata::util
