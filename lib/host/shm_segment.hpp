// ShmSegment: one POSIX shared-memory segment per node communicator, mapped
// by every local rank. Rank 0 creates it, the others open it, and rank 0
// unlinks the name as soon as everyone has it mapped: from then on no name
// exists, so nothing is left behind on any exit path (exception, timeout,
// crash) — the kernel frees the memory when the last mapping goes.
//
// Layout: per local rank, a control block (two counters on their own cache
// lines, and two fingerprint slots) and two data "sets" used alternately by
// successive rounds (double buffering, see shm_rounds.hpp).
#pragma once

#include <mpi.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "plan/fingerprint.hpp"

namespace strata::host {

class ShmSegment {
 public:
  // Collective over `node_comm`, whose ranks must share memory. Each set
  // holds `set_bytes`. Throws BackendError (on every rank) if any rank could
  // not create or map it.
  ShmSegment(MPI_Comm node_comm, std::size_t set_bytes);
  ~ShmSegment();
  ShmSegment(const ShmSegment&) = delete;
  ShmSegment& operator=(const ShmSegment&) = delete;

  int local_rank() const { return local_rank_; }
  int local_size() const { return local_size_; }
  std::size_t set_bytes() const { return set_bytes_; }

  // Inline: the shared-memory rounds call these in their polling loops.
  // The set `round` uses.
  std::byte* area(int rank, std::uint64_t round) const {
    return base_ + stride_ * static_cast<std::size_t>(rank) + kControlBytes + (round % 2) * set_bytes_;
  }
  // Last round whose data `rank` wrote; last round `rank` finished reading.
  std::atomic<std::uint64_t>& staged(int rank) const { return control(rank).staged; }
  std::atomic<std::uint64_t>& consumed(int rank) const { return control(rank).consumed; }
  // The fingerprint `rank` published with round `round` (a call's first
  // round), and its digest (plan::digest), which sits in `staged`'s line.
  plan::Fingerprint& fingerprint(int rank, std::uint64_t round) const {
    return control(rank).fingerprint[round % 2];
  }
  std::uint64_t& digest(int rank, std::uint64_t round) const { return control(rank).digest[round % 2]; }

  // Rounds are numbered from 1, identically on every local rank (every rank
  // runs the same rounds in the same order).
  std::uint64_t next_round() { return ++round_; }

 private:
  // Counters on separate cache lines: the writer of one never invalidates the
  // line a reader polls for the other.
  struct Control {
    alignas(64) std::atomic<std::uint64_t> staged;
    // The digest of the call's fingerprint shares `staged`'s cache line: a
    // reader that saw `staged` has it already, so the call check moves no
    // extra cache line between cores. Written before `staged` is published
    // (release), read after it was seen (acquire); one per set, like the data.
    std::uint64_t digest[2];
    alignas(64) std::atomic<std::uint64_t> consumed;
    // The whole fingerprint, read only when digests differ (to say who differs).
    alignas(64) plan::Fingerprint fingerprint[2];
  };
  static constexpr std::size_t kControlBytes = 4096;  // a page: the data sets start page-aligned
  static_assert(sizeof(Control) <= kControlBytes);
  Control& control(int rank) const {
    return *reinterpret_cast<Control*>(base_ + stride_ * static_cast<std::size_t>(rank));
  }

  int local_rank_ = 0, local_size_ = 1;
  std::size_t set_bytes_ = 0, stride_ = 0, mapped_bytes_ = 0;
  std::byte* base_ = nullptr;
  std::uint64_t round_ = 0;
};

}  // namespace strata::host
