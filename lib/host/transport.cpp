#include "host/transport.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "util/check.hpp"
#include "util/copy.hpp"
#include "util/fault.hpp"
#include "util/where.hpp"
#include "strata/errors.hpp"
#include "util/abandoned.hpp"

namespace strata::host {
namespace {

// MPI counts are int: split anything larger into pieces of 1 GiB. Both sides
// split the same byte count the same way, and same-tag messages match in
// order, so the pieces pair up.
constexpr std::size_t kMaxMessage = std::size_t{1} << 30;

// Post `bytes` as one or more MPI messages with `post` (MPI_Isend or
// MPI_Irecv), recording each request and its peer.
template <typename Buffer, typename Post>
void post_pieces(std::vector<MPI_Request>& requests, std::vector<int>& peers, Buffer data,
                 std::size_t bytes, int peer, Post post) {
  auto* p = static_cast<std::conditional_t<std::is_const_v<std::remove_pointer_t<Buffer>>, const std::byte*, std::byte*>>(data);
  do {
    const std::size_t piece = std::min(bytes, kMaxMessage);
    MPI_Request request;
    post(p, static_cast<int>(piece), &request);
    requests.push_back(request);
    peers.push_back(peer);
    p += piece;
    bytes -= piece;
  } while (bytes > 0);
}

}  // namespace

Transport::Transport(MPI_Comm comm, const util::Deadline& deadline, CallInfo info, util::Workspace& workspace,
                     util::Arena* landing)
    : comm_(comm), deadline_(deadline), info_(info), workspace_(workspace),
      landing_(deadline.bounded() ? landing : nullptr) {
  STRATA_CHECK_MPI(MPI_Comm_rank(comm, &rank_));
  STRATA_CHECK_MPI(MPI_Comm_size(comm, &size_));
}

void Transport::isend(Requests& into, const void* data, std::size_t bytes, int peer, int tag) {
  post_pieces(into.requests_, into.peers_, data, bytes, peer, [&](const std::byte* p, int n, MPI_Request* r) {
    STRATA_CHECK_MPI(MPI_Isend(p, n, MPI_BYTE, peer, tag, comm_, r));
  });
}

void Transport::irecv(Requests& into, void* data, std::size_t bytes, int peer, int tag) {
  if (util::fault::armed()) [[unlikely]]
    into.received_.emplace_back(data, bytes);
  if (landing_ && bytes > 0 && !workspace_.owns(data, bytes)) {
    std::byte* first = landing_->allocate(bytes);
    into.landings_.push_back({first, data, bytes});
    data = first;
  }
  post_pieces(into.requests_, into.peers_, data, bytes, peer, [&](std::byte* p, int n, MPI_Request* r) {
    STRATA_CHECK_MPI(MPI_Irecv(p, n, MPI_BYTE, peer, tag, comm_, r));
  });
}

bool Transport::test(Requests& requests) {
  if (requests.empty()) return true;
  int done = 0;
  STRATA_CHECK_MPI(MPI_Testall(static_cast<int>(requests.requests_.size()), requests.requests_.data(), &done,
                               MPI_STATUSES_IGNORE));
  if (!done) return false;
  for (const Requests::Landing& landing : requests.landings_) util::copy_bytes(landing.to, landing.from, landing.bytes);
  if (!requests.received_.empty()) [[unlikely]] {
    for (const auto& [data, bytes] : requests.received_) util::fault::at(util::fault::Site::mpi, info_.sequence, data, bytes);
    requests.received_.clear();
  }
  requests.requests_.clear();
  requests.peers_.clear();
  requests.landings_.clear();
  return true;
}

void Transport::wait(Requests& requests) {
  util::Backoff backoff;
  while (!test(requests)) {
    if (deadline_.expired()) {
      // Name only the peers whose operations are still pending.
      std::vector<int> pending;
      for (std::size_t i = 0; i < requests.requests_.size(); ++i) {
        int done = 0;
        STRATA_CHECK_MPI(MPI_Test(&requests.requests_[i], &done, MPI_STATUS_IGNORE));
        if (!done) pending.push_back(requests.peers_[i]);
      }
      util::abandoned_operations_on(comm_);
      throw_deadline(pending);
    }
    backoff.pause();
    if (backoff.wants_peers()) [[unlikely]]
      backoff.note_peers(requests.peers_, comm_);
  }
}

void Transport::wait_collective(MPI_Request& request) {
  util::Backoff backoff;
  for (;;) {
    int done = 0;
    STRATA_CHECK_MPI(MPI_Test(&request, &done, MPI_STATUS_IGNORE));
    if (done) return;
    if (deadline_.expired()) {
      util::abandoned_operations_on(comm_);  // MPI cannot cancel a collective: it stays pending
      throw_deadline({});
    }
    backoff.pause();
  }
}

void Transport::idle(util::Backoff& backoff, std::span<const int> waiting_for) {
  if (deadline_.expired()) throw_deadline({waiting_for.begin(), waiting_for.end()});
  backoff.pause();
  if (backoff.wants_peers()) [[unlikely]]
    backoff.note_peers(waiting_for, comm_);
}

void Transport::throw_deadline(std::vector<int> waiting_for) const {
  std::sort(waiting_for.begin(), waiting_for.end());
  waiting_for.erase(std::unique(waiting_for.begin(), waiting_for.end()), waiting_for.end());
  const std::string peers = waiting_for.empty() ? std::string("peers unknown (inside MPI's own collective)")
                                                : fmt::format("still waiting for rank(s) {}", waiting_for);
  throw DeadlineExceeded(
      fmt::format("strata [{}]: {} #{} ({} bytes, algorithm {}) exceeded its timeout of {} s on rank {}; {}. "
                  "The communicator is now unusable; check that every rank makes the same calls in the same order.",
                  util::where(), info_.collective, info_.sequence, info_.bytes, info_.algorithm, deadline_.seconds(),
                  rank_, peers),
      std::move(waiting_for));
}

}  // namespace strata::host
