// ShmSegment: one POSIX shared-memory segment per node communicator, mapped
// by every local rank. Rank 0 creates it, the others open it, and rank 0
// unlinks the name as soon as everyone has it mapped: from then on no name
// exists, so nothing is left behind on any exit path (exception, timeout,
// crash) — the kernel frees the memory when the last mapping goes.
//
// Layout: per local rank, a control block (per set a cache line with its
// `staged` counter, digest and room for a small message; a `consumed`
// counter on its own line; two fingerprint slots; a line with the rank's
// identity for cross-memory reads) and two data "sets" used alternately by
// successive rounds (double buffering, see shm_rounds.hpp).
//
// At creation the ranks also find out, together, whether each can read the
// others' memory directly (cross-memory attach, host/cma.hpp) and whether
// that pays (it does not where they sit near each other,
// shm_placement.hpp): direct() says so, the same on every rank, and the
// collectives' direct path (shm_direct.hpp) uses it.
#pragma once

#include <mpi.h>
#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <optional>

#include "host/shm_direct_sizes.hpp"
#include "host/shm_placement.hpp"
#include "plan/fingerprint.hpp"

namespace strata::host {

class ShmSegment {
 public:
  // Collective over `node_comm`, whose ranks must share memory. Each set
  // holds `set_bytes`. Throws BackendError (on every rank) if any rank could
  // not create or map it. Also detects, collectively, whether every rank
  // can read every other's memory with process_vm_readv (each reads a
  // peer's identity line through the peer's own address for it); when not
  // (or STRATA_CMA=0, or the node is crowded and STRATA_CMA is not 1),
  // direct() is false on every rank and the reason is logged once per
  // process at INFO. When it can and STRATA_CMA is not 1, direct() is
  // true only on a node of two ranks that do not sit near each other
  // (STRATA_SHM_PLACEMENT, else measured, and measured again as calls go
  // by: placement_watched()). Wherever the reads work on a node of two
  // ranks (or STRATA_CMA=1), it also times one to choose direct_sizes().
  ShmSegment(MPI_Comm node_comm, std::size_t set_bytes);
  ~ShmSegment();
  ShmSegment(const ShmSegment&) = delete;
  ShmSegment& operator=(const ShmSegment&) = delete;

  int local_rank() const { return local_rank_; }
  int local_size() const { return local_size_; }
  std::size_t set_bytes() const { return set_bytes_; }

  // Whether the collectives may read peers' buffers directly (the same
  // answer on every local rank), and the process to read `rank`'s from.
  bool direct() const { return direct_; }
  // Whether every local rank can read every other's memory (the reads
  // work and STRATA_CMA allows them: what direct() needs before its
  // choices by placement and node size). The same on every local rank.
  bool peers_readable() const { return readable_; }
  // The sizes of each collective that read directly when direct() says
  // they may: chosen at creation from what a cross-memory read costs here
  // (shm_direct_sizes.hpp; the dear sizes where nothing was measured). The
  // same on every local rank.
  const shm::direct::Sizes& direct_sizes() const { return direct_sizes_; }
  // On a node of two ranks where the direct path may run and STRATA_CMA is
  // not 1: how near each other they sit (shm_placement.hpp); else
  // unmeasured.
  shm::Placement placement() const { return placement_; }
  // Whether the placement was measured at creation, and so is measured
  // again as calls go by (shm_placement.hpp, recheck_placement): not where
  // STRATA_SHM_PLACEMENT gave it or the direct path cannot run at all.
  bool placement_watched() const { return watched_; }
  // Whether a recheck is due after a successful call of `bytes` that could
  // read directly (counted here): at the call number next_recheck_ or
  // once such calls moved shm::kRecheckEveryBytes since the last one. The
  // same answer on every local rank: all count the same successful calls.
  bool recheck_due_after(std::uint64_t sequence, std::size_t bytes) {
    bytes_since_recheck_ += bytes;
    return sequence >= next_recheck_ || bytes_since_recheck_ >= shm::kRecheckEveryBytes;
  }
  // What a recheck uses (local ranks 0 and 1 of a node of two).
  shm::RecheckLines recheck_lines() const {
    return {{&control(0).placement_probe, &control(1).placement_probe}, &control(0).placement_verdict};
  }
  // After the recheck at call `sequence` (whatever it found): the next one
  // is due at the next multiple of shm::recheck_every_calls(); a verdict it
  // returned decides direct() from the next call on.
  void rechecked(std::uint64_t sequence, std::optional<shm::Placement> verdict);
  // More local ranks than the CPUs they may run on together (the union of
  // their affinity masks: mpirun's binding, a Slurm cpuset): they take
  // turns on those CPUs. Found at creation, the same on every local rank.
  bool crowded() const { return crowded_; }
  pid_t pid(int rank) const { return static_cast<pid_t>(control(rank).identity.pid); }
  // The first round of the last direct call `rank` left by an exception (a
  // timeout, a failed read, a mismatch), published before it returned:
  // a peer that read its buffers during that call cannot trust what it
  // read (shm_direct.cpp). 0: none.
  std::atomic<std::uint64_t>& left(int rank) const { return control(rank).identity.left; }

  // Inline: the shared-memory rounds call these in their polling loops.
  // The set `round` uses.
  std::byte* area(int rank, std::uint64_t round) const {
    return base_ + stride_ * static_cast<std::size_t>(rank) + kControlBytes + (round % 2) * set_bytes_;
  }
  // Whether `rank` wrote its data for `round` (it publishes round numbers,
  // one counter per set, so a peer tests staged(rank, round) >= round);
  // the last round `rank` finished reading (one counter for both sets).
  // The second argument of consumed() is ignored: both have the shape the
  // waiting loops take.
  std::atomic<std::uint64_t>& staged(int rank, std::uint64_t round) const {
    return control(rank).round[round % 2].staged;
  }
  std::atomic<std::uint64_t>& consumed(int rank, std::uint64_t = 0) const { return control(rank).consumed; }
  // The fingerprint `rank` published with round `round` (a call's first
  // round), and its digest (plan::digest), which sits in `staged`'s line.
  plan::Fingerprint& fingerprint(int rank, std::uint64_t round) const {
    return control(rank).fingerprint[round % 2];
  }
  std::uint64_t& digest(int rank, std::uint64_t round) const { return control(rank).round[round % 2].digest; }
  // kLineBytes of `rank`'s data for `round` in `staged`'s own cache line: a
  // message that fits travels with the counter a peer polls, one line
  // transfer in all.
  static constexpr std::size_t kLineBytes = 48;
  std::byte* line_data(int rank, std::uint64_t round) const { return control(rank).round[round % 2].data; }

  // Rounds are numbered from 1, identically on every local rank (every rank
  // runs the same rounds in the same order).
  std::uint64_t next_round() { return ++round_; }

  // The highest round for which this rank saw every local rank's `staged`
  // (note_all_staged). A rank publishes round r's `staged` only after it
  // finished reading round r - 1's sets, so having seen all of round r - 1
  // means every peer is done with the sets of round r - 2: claiming my set
  // for round r needs no look at their `consumed` lines.
  std::uint64_t all_staged_seen() const { return all_staged_seen_; }
  void note_all_staged(std::uint64_t round) {
    if (round > all_staged_seen_) all_staged_seen_ = round;
  }

 private:
  void detect_direct(MPI_Comm node_comm);
  // Collective: times a read of local rank 1's control page (mapped in its
  // process as long as the segment lives) and sets direct_sizes_.
  void choose_direct_sizes(MPI_Comm node_comm);

  // Per set (round parity), one cache line: `staged`, the call's digest and
  // a small message's data, so that a peer polling `staged` brings all
  // three over at once. `consumed` has a line of its own: its writer never
  // invalidates the line a reader polls for `staged`.
  struct alignas(64) RoundLine {
    std::atomic<std::uint64_t> staged;
    // Written before `staged` is published (release), read after it was
    // seen (acquire).
    std::uint64_t digest;
    std::byte data[kLineBytes];
  };
  static_assert(sizeof(RoundLine) == 64);
  // Who the rank is, for cross-memory reads: its pid and this line's own
  // address in its own address space (what a peer reads back through
  // process_vm_readv to prove it can), written once at creation; and
  // `left`, written only when a direct call ends by an exception. Read by
  // peers, almost never written: the line stays shared in their caches.
  struct alignas(64) Identity {
    std::int64_t pid;
    std::uint64_t self;
    std::atomic<std::uint64_t> left;
  };
  struct Control {
    RoundLine round[2];
    alignas(64) std::atomic<std::uint64_t> consumed;
    // The whole fingerprint, read only when digests differ (to say who differs).
    alignas(64) plan::Fingerprint fingerprint[2];
    Identity identity;
    // Written only by this rank, while the placement is measured.
    alignas(64) std::atomic<std::uint64_t> placement_probe;
    // Local rank 0's only: a recheck's verdict (shm_placement.cpp).
    alignas(64) std::atomic<std::uint64_t> placement_verdict;
  };
  static constexpr std::size_t kControlBytes = 4096;  // a page: the data sets start page-aligned
  static_assert(sizeof(Control) <= kControlBytes);
  static_assert(shm::direct::kProbeBytes <= kControlBytes);
  Control& control(int rank) const {
    return *reinterpret_cast<Control*>(base_ + stride_ * static_cast<std::size_t>(rank));
  }

  int local_rank_ = 0, local_size_ = 1;
  std::size_t set_bytes_ = 0, stride_ = 0, mapped_bytes_ = 0;
  std::byte* base_ = nullptr;
  std::uint64_t round_ = 0;
  std::uint64_t all_staged_seen_ = 0;
  bool direct_ = false;
  bool readable_ = false;
  bool crowded_ = false;
  bool watched_ = false;
  std::uint64_t next_recheck_ = 0;
  std::uint64_t bytes_since_recheck_ = 0;
  shm::Placement placement_ = shm::Placement::unmeasured;
  shm::direct::Sizes direct_sizes_ = shm::direct::kDearReads;
};

}  // namespace strata::host
