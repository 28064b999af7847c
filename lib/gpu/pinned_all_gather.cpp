#include "gpu/pinned_all_gather.hpp"

#include <algorithm>

namespace strata::gpu {
namespace {

// The same chunk as host staging (gpu/staged.cpp): big enough to amortise
// a transfer's latency, small enough that pinned memory stays modest.
constexpr std::size_t kDefaultChunkBytes = 4u << 20;
// Rounds in flight: the staging buffers are [0, kSets) for downloads and
// [kSets, 2 kSets) for receives; events likewise.
constexpr std::size_t kSets = 2;

}  // namespace

SlicePieces::SlicePieces(const plan::Job& job, int slice_owners, int members)
    : count(job.count), owners(std::size_t(slice_owners)) {
  const std::size_t chunk = std::max(job.chunk_bytes, kDefaultChunkBytes);
  per_round = std::max<std::size_t>(1, chunk / (dtype_size(job.dtype) * std::size_t(members)));
  // The last owner's slice is the largest (it takes the remainder).
  const std::size_t largest = util::owner_slice(count, owners, owners - 1).count;
  rounds = (largest + per_round - 1) / per_round;
}

util::Slice SlicePieces::of(int s, std::size_t k) const {
  const util::Slice slice = util::owner_slice(count, owners, std::size_t(s));
  const std::size_t first = std::min(slice.count, k * per_round);
  return {slice.offset + first, std::min(per_round, slice.count - first)};
}

void run_pinned_rounds(Backend& backend, host::Transport& t, const PinnedRounds& r) {
  if (r.rounds == 0) return;
  std::byte* send_buffers[kSets];
  std::byte* recv_buffers[kSets];
  for (std::size_t set = 0; set < kSets; ++set) {
    send_buffers[set] = static_cast<std::byte*>(backend.staging(set, r.send_bytes));
    recv_buffers[set] = static_cast<std::byte*>(backend.staging(kSets + set, r.recv_bytes));
  }
  const auto send = [&](std::size_t k) { return send_buffers[k % kSets]; };
  const auto recv = [&](std::size_t k) { return recv_buffers[k % kSets]; };
  // Event set: round k's downloads are in its send buffer. Event kSets +
  // set: the uploads that last read its receive buffer are done.
  const auto download = [&](std::size_t k) {
    r.download(k, send(k));
    backend.record(k % kSets);
  };
  for (std::size_t k = 0; k < std::min(r.rounds, kSets); ++k) download(k);
  for (std::size_t k = 0; k < r.rounds; ++k) {
    const std::size_t set = k % kSets;
    if (k >= kSets) backend.wait_for(kSets + set);  // round k - 2's uploads read that buffer
    backend.wait_for(set);                          // round k's downloads landed
    host::Requests requests;
    r.exchange(k, send(k), recv(k), requests);
    t.wait(requests);
    // The send buffer is free again: queue its next downloads first, so
    // that they are not held up behind this round's uploads.
    if (k + kSets < r.rounds) download(k + kSets);
    r.upload(k, recv(k));
    backend.record(kSets + set);
  }
  backend.wait();
}

void pinned_all_gather(Backend& backend, MPI_Comm comm, const plan::Job& job, int owners) {
  host::Transport t(comm, backend.deadline(), backend.info(), backend.workspace());
  const std::size_t element = dtype_size(job.dtype);
  const int rank = t.rank(), size = t.size();
  const SlicePieces pieces(job, owners, size);
  const std::size_t piece_bytes = pieces.per_round * element;
  auto* out = static_cast<std::byte*>(job.out);
  PinnedRounds rounds;
  rounds.rounds = pieces.rounds;
  rounds.send_bytes = piece_bytes;
  rounds.recv_bytes = piece_bytes * std::size_t(owners);  // owner s's piece at [s * piece_bytes]
  rounds.download = [&](std::size_t k, std::byte* send) {
    if (rank >= owners) return;
    const util::Slice mine = pieces.of(rank, k);
    if (mine.count > 0)
      backend.copy(send, util::element_at(out, mine.offset, element), mine.count * element, Copy::device_to_host);
  };
  rounds.exchange = [&](std::size_t k, const std::byte* send, std::byte* recv, host::Requests& requests) {
    for (int s = 0; s < owners; ++s) {
      const util::Slice piece = pieces.of(s, k);
      if (piece.count == 0) continue;
      if (s == rank) {
        for (int r = 0; r < size; ++r)
          if (r != rank) t.isend(requests, send, piece.count * element, r);
      } else {
        t.irecv(requests, recv + std::size_t(s) * piece_bytes, piece.count * element, s);
      }
    }
  };
  rounds.upload = [&](std::size_t k, const std::byte* recv) {
    for (int s = 0; s < owners; ++s) {
      const util::Slice piece = pieces.of(s, k);
      if (s != rank && piece.count > 0)
        backend.copy(util::element_at(out, piece.offset, element), recv + std::size_t(s) * piece_bytes,
                     piece.count * element, Copy::host_to_device);
    }
  };
  run_pinned_rounds(backend, t, rounds);
}

}  // namespace strata::gpu
