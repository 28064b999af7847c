// Device slices over MPI through pinned host memory, in bounded rounds:
// the pipeline both halves of psgpu run (its reduce-scatter in
// gpu/psgpu.cpp), and the all-gather of psgpu and of host algorithms run on
// CUDA data (gpu/staged.hpp). Needs no NCCL, so it works where ranks share a
// GPU. Pinned memory is four of the backend's staging buffers of at most one
// chunk each, whatever the data's size.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <functional>

#include "gpu/backend.hpp"
#include "host/transport.hpp"
#include "plan/job.hpp"
#include "util/slice.hpp"

namespace strata::gpu {

// The owners' slices (util::owner_slice of job.count over `owners`) cut
// into pieces of at most `per_round` elements: round k moves piece k of
// every slice. Every member of a group computes the same pieces.
struct SlicePieces {
  // Pieces small enough that one piece for each of `members` fits a chunk
  // (the larger of job.chunk_bytes and 4 MiB): a round's pinned buffers
  // hold at most that.
  SlicePieces(const plan::Job& job, int slice_owners, int members);
  // Piece k of owner s's slice (count 0 once the slice is used up).
  util::Slice of(int s, std::size_t k) const;

  std::size_t count = 0;      // job.count
  std::size_t owners = 1;
  std::size_t per_round = 1;  // elements of one piece, at most
  std::size_t rounds = 0;     // enough for the largest slice
};

// One pipeline over rounds 0..rounds-1: round k's downloads go into a
// pinned buffer, its MPI transfers move them into another, and its uploads
// read that one. Two rounds are in flight: the downloads of round k + 2
// are queued as soon as round k's transfers are done, so the device's
// copies (and reductions) overlap the next round's transfers.
struct PinnedRounds {
  std::size_t rounds = 0;
  std::size_t send_bytes = 0;  // pinned bytes one round downloads, at most
  std::size_t recv_bytes = 0;  // pinned bytes one round receives, at most
  // Enqueues round k's device-to-host copies into `send`.
  std::function<void(std::size_t k, std::byte* send)> download;
  // Posts round k's MPI sends from `send` and receives into `recv`.
  std::function<void(std::size_t k, const std::byte* send, std::byte* recv, host::Requests& requests)> exchange;
  // Enqueues round k's host-to-device copies from `recv`, and any device
  // work that follows them.
  std::function<void(std::size_t k, const std::byte* recv)> upload;
};

// Runs `rounds` over `t`; returns once every round's device work finished
// (polling against the open call's deadline).
void run_pinned_rounds(Backend& backend, host::Transport& t, const PinnedRounds& rounds);

// Member s < owners holds slice s (util::owner_slice) of job.out on its
// device; afterwards every member of `comm` holds every slice there. Waits
// for its copies itself (within the open call's deadline).
void pinned_all_gather(Backend& backend, MPI_Comm comm, const plan::Job& job, int owners);

}  // namespace strata::gpu
