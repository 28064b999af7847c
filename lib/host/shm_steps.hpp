// The steps every shared-memory round is built from (shm_rounds.hpp has the
// protocol): claiming my set, publishing a counter, waiting for peers'
// counters against the call's deadline, and the call check that rides in a
// call's first round. Internal to lib/host/shm_*.cpp.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "host/shm_segment.hpp"
#include "host/transport.hpp"
#include "util/fault.hpp"
#include "plan/fingerprint.hpp"
#include "util/deadline.hpp"

namespace strata::host::shm::steps {

// Data this rank just staged in its set for peers to read: where a test
// flips a bit (STRATA_FAULT_FLIP=shm:..., util/fault.hpp); one predictable
// branch otherwise.
inline void staged_for_peers(const Transport& t, void* data, std::size_t bytes) {
  util::fault::at(util::fault::Site::shm, t.info().sequence, data, bytes);
}

using Counter = std::atomic<std::uint64_t>& (ShmSegment::*)(int, std::uint64_t) const;

// Wait until `counter` of every rank in [first, last) other than me reaches
// `value`. Polls with backoff; only when the deadline passed does it list
// the laggards (no allocation on the latency path). The counter is a
// template argument so that the polling loop inlines its accessor.
template <Counter counter>
void wait_for(Transport& t, const ShmSegment& seg, int first, int last, std::uint64_t value,
              util::Backoff::Patience patience = util::Backoff::Patience::peers) {
  auto behind = [&](int r) {
    return r != seg.local_rank() && (seg.*counter)(r, value).load(std::memory_order_acquire) < value;
  };
  util::Backoff backoff(patience);
  for (;;) {
    bool arrived = true;
    for (int r = first; r < last && arrived; ++r) arrived = !behind(r);
    if (arrived) return;
    if (t.expired()) {
      std::vector<int> lagging;
      for (int r = first; r < last; ++r)
        if (behind(r)) lagging.push_back(r);
      t.idle(backoff, lagging);  // throws DeadlineExceeded naming them
    }
    backoff.pause();
    if (backoff.wants_peers()) [[unlikely]] {  // a traced wait (STRATA_TRACE): name them for its span
      std::vector<int> lagging;
      for (int r = first; r < last; ++r)
        if (behind(r)) lagging.push_back(r);
      backoff.note_peers(lagging, t.comm());
    }
  }
}

// Waiting for every local rank's `staged` is noted in the segment (it
// spares later claims, see ShmSegment::all_staged_seen).
inline void wait_staged(Transport& t, ShmSegment& seg, int first, int last, std::uint64_t round) {
  wait_for<&ShmSegment::staged>(t, seg, first, last, round);
  if (first == 0 && last == seg.local_size()) seg.note_all_staged(round);
}
inline void wait_consumed(Transport& t, const ShmSegment& seg, int first, int last, std::uint64_t round,
                          util::Backoff::Patience patience = util::Backoff::Patience::peers) {
  wait_for<&ShmSegment::consumed>(t, seg, first, last, round, patience);
}

// Step 1 of a round: my set for `round` is free once every peer consumed
// round - 2 — known without a look at their lines when this rank saw all
// of round - 1 staged.
inline void claim_set(Transport& t, const ShmSegment& seg, std::uint64_t round) {
  if (round > 2 && seg.all_staged_seen() + 1 < round) wait_consumed(t, seg, 0, seg.local_size(), round - 2);
}

inline void publish_staged(const ShmSegment& seg, std::uint64_t round) {
  seg.staged(seg.local_rank(), round).store(round, std::memory_order_release);
}
inline void publish_consumed(const ShmSegment& seg, std::uint64_t round) {
  seg.consumed(seg.local_rank()).store(round, std::memory_order_release);
}

// A call's digest travels right after the data a peer reads from my set,
// in (or next to) a line the peer reads anyway: a write into `staged`'s
// line while a peer spins on it would cost one more transfer of that line
// per call.
inline std::size_t digest_offset(std::size_t bytes) { return (bytes + 7) / 8 * 8; }
inline void put_digest(std::byte* at, std::uint64_t digest) { std::memcpy(at, &digest, sizeof digest); }
inline std::uint64_t get_digest(const std::byte* at) {
  std::uint64_t digest = 0;
  std::memcpy(&digest, at, sizeof digest);
  return digest;
}

// Every rank finishes round `round` (so the next call's rounds still line
// up) and raises Mismatch describing the fingerprints published with it.
[[noreturn]] void throw_difference(Transport& t, const ShmSegment& seg, std::uint64_t round);

// The check carried in the control block: my fingerprint and its digest
// (in `staged`'s line) go out with my `staged`; once every rank's `staged`
// is seen, verify_control compares the digests (throw_difference on a
// difference).
void publish_check(const ShmSegment& seg, std::uint64_t round, const plan::Fingerprint& check);
void verify_control(Transport& t, const ShmSegment& seg, std::uint64_t round);

// The check carried next to the data: every rank put `digest` at the same
// offset `at` of its own set; compare them all (after every `staged`).
void verify_in_sets(Transport& t, const ShmSegment& seg, std::uint64_t round, std::size_t at,
                    std::uint64_t digest);

// Where a round's message of `bytes` bytes travels: in each rank's staged
// line when it fits (one line transfer brings counter, digest and data),
// else in its set with the digest right after the data, at a slot that
// moves round by round through the set (kRoundSlots of them, where they
// fit): a writer whose lines its peers read two rounds before waits for
// their copies to be invalidated, and the older the lines the cheaper
// that is (on an Intel Xeon VM, in two runs, 2-rank all-reduce of 4-16
// KiB took 6-17% less time and reduce of 16 KiB 10-14% less with eight
// slots than with one: docs/ALGORITHMS.md, "Rotating slots for one-round
// messages").
// Every rank computes the same slot from the round and the size; ranks
// that disagree on the size look in different places, find a digest that
// is not theirs and raise Mismatch as before.
class RoundData {
 public:
  static constexpr std::size_t kRoundSlots = 8;

  RoundData(const ShmSegment& seg, std::uint64_t round, std::size_t bytes)
      : seg_(seg), round_(round), bytes_(bytes), in_line_(bytes <= ShmSegment::kLineBytes),
        at_(in_line_ ? 0 : slot_offset(seg.set_bytes(), round, bytes)) {}

  std::byte* of(int rank) const { return in_line_ ? seg_.line_data(rank, round_) : seg_.area(rank, round_) + at_; }
  // My digest where peers look for it (before `staged` is published).
  void put_check(std::uint64_t digest) const {
    if (in_line_) seg_.digest(seg_.local_rank(), round_) = digest;
    else put_digest(of(seg_.local_rank()) + digest_offset(bytes_), digest);
  }
  // Every rank's digest against mine (after every `staged` was seen).
  void verify(Transport& t, std::uint64_t digest) const {
    if (in_line_) verify_control(t, seg_, round_);
    else verify_in_sets(t, seg_, round_, at_ + digest_offset(bytes_), digest);
  }

 private:
  // Page-sized slots, each holding the message and its digest; a set is
  // used by every other round, hence round / 2.
  static std::size_t slot_offset(std::size_t set_bytes, std::uint64_t round, std::size_t bytes) {
    const std::size_t slot = (digest_offset(bytes) + sizeof(std::uint64_t) + 4095) / 4096 * 4096;
    const std::size_t slots = std::min(kRoundSlots, set_bytes / slot);
    return slots > 1 ? static_cast<std::size_t>(round / 2 % slots) * slot : 0;
  }

  const ShmSegment& seg_;
  std::uint64_t round_;
  std::size_t bytes_;
  bool in_line_;
  std::size_t at_;  // the slot's offset in the set
};

// Bytes per block of a segment: its set divided among the local ranks.
inline std::size_t segment_block(const ShmSegment& seg) {
  return seg.set_bytes() / static_cast<std::size_t>(seg.local_size()) / 64 * 64;
}

// Elements per region of `bytes` bytes: keeps room after the data for the
// call check's digest.
inline std::size_t elements_fitting(std::size_t bytes, std::size_t element) { return (bytes - 64) / element; }

}  // namespace strata::host::shm::steps
