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

  std::byte* area(int rank, std::uint64_t round) const;  // the set `round` uses
  std::atomic<std::uint64_t>& staged(int rank) const;    // last round whose data `rank` wrote
  std::atomic<std::uint64_t>& consumed(int rank) const;  // last round `rank` finished reading
  // The fingerprint `rank` published with round `round` (a call's first
  // round), and its digest (plan::digest), which sits in `staged`'s line.
  plan::Fingerprint& fingerprint(int rank, std::uint64_t round) const;
  std::uint64_t& digest(int rank, std::uint64_t round) const;

  // Rounds are numbered from 1, identically on every local rank (every rank
  // runs the same rounds in the same order).
  std::uint64_t next_round() { return ++round_; }

 private:
  struct Control;
  Control& control(int rank) const;

  int local_rank_ = 0, local_size_ = 1;
  std::size_t set_bytes_ = 0, stride_ = 0, mapped_bytes_ = 0;
  std::byte* base_ = nullptr;
  std::uint64_t round_ = 0;
};

}  // namespace strata::host
