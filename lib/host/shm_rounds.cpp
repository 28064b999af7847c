#include "host/shm_rounds.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "util/deadline.hpp"
#include "util/element.hpp"
#include "host/reduce_kernel.hpp"
#include "util/slice.hpp"

namespace strata::host::shm {
namespace {

using Counter = std::atomic<std::uint64_t>& (ShmSegment::*)(int) const;

// Wait until `counter` of every rank in [first, last) other than me reaches
// `value`. Polls with backoff; only when the deadline passed does it list
// the laggards (no allocation on the latency path). The counter is a
// template argument so that the polling loop inlines its accessor.
template <Counter counter>
void wait_for(Transport& t, const ShmSegment& seg, int first, int last, std::uint64_t value) {
  auto behind = [&](int r) {
    return r != seg.local_rank() && (seg.*counter)(r).load(std::memory_order_acquire) < value;
  };
  util::Backoff backoff;
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
  }
}

// Step 1 of a round: my set for `round` is free once every peer consumed
// round - 2.
void claim_set(Transport& t, const ShmSegment& seg, std::uint64_t round) {
  if (round > 2) wait_for<&ShmSegment::consumed>(t, seg, 0, seg.local_size(), round - 2);
}

template <Counter counter>
void publish(const ShmSegment& seg, std::uint64_t round) {
  (seg.*counter)(seg.local_rank()).store(round, std::memory_order_release);
}

// The call check carried by round `round`: my fingerprint goes out with my
// `staged`, and once every rank's `staged` is seen, every rank compares
// all of them. On a difference every rank finishes the round (so the next
// call's rounds still line up) and raises Mismatch; no data was used.
void publish_check(const ShmSegment& seg, std::uint64_t round, const plan::Fingerprint& check) {
  seg.fingerprint(seg.local_rank(), round) = check;
  seg.digest(seg.local_rank(), round) = plan::digest(check);
}

[[noreturn]] void throw_difference(Transport& t, const ShmSegment& seg, std::uint64_t round) {
  std::vector<plan::Fingerprint> all;
  for (int r = 0; r < seg.local_size(); ++r) all.push_back(seg.fingerprint(r, round));
  publish<&ShmSegment::consumed>(seg, round);
  plan::throw_mismatch(t.info(), t.rank(), all);
}

void verify_check(Transport& t, const ShmSegment& seg, std::uint64_t round) {
  // Digests first (in the lines `staged` already brought over); whole
  // fingerprints only to describe a difference.
  const std::uint64_t mine = seg.digest(seg.local_rank(), round);
  for (int r = 0; r < seg.local_size(); ++r)
    if (seg.digest(r, round) != mine) throw_difference(t, seg, round);
}

// The all-reduce carries the digest right after the data a peer reads from
// my set, in (or next to) a line the peer reads anyway: a write into
// `staged`'s line while a peer spins on it would cost one more transfer of
// that line per call.
std::size_t digest_offset(std::size_t bytes) { return (bytes + 7) / 8 * 8; }

void put_digest(std::byte* at, std::uint64_t digest) { std::memcpy(at, &digest, sizeof digest); }
std::uint64_t get_digest(const std::byte* at) {
  std::uint64_t digest = 0;
  std::memcpy(&digest, at, sizeof digest);
  return digest;
}

// Bytes per block of a segment: what set_bytes_for gave it, per rank.
std::size_t segment_block(const ShmSegment& seg) {
  return seg.set_bytes() / static_cast<std::size_t>(seg.local_size()) / 64 * 64;
}

// Elements per block: a block's region keeps room after the data for the
// call check's digest.
std::size_t elements_per_block(std::size_t block, std::size_t element) { return (block - 64) / element; }

// Block `b` of slice `s`, clipped to the slice (may be empty).
util::Slice block_of(std::size_t count, int owners, int s, std::size_t b, std::size_t per_block) {
  const util::Slice slice = util::owner_slice(count, static_cast<std::size_t>(owners), static_cast<std::size_t>(s));
  const std::size_t begin = std::min(slice.count, b * per_block);
  return {slice.offset + begin, std::min(per_block, slice.count - begin)};
}

std::size_t rounds_for(std::size_t count, int owners, std::size_t per_block) {
  // The last owner's slice is the largest (it takes the remainder).
  const std::size_t largest =
      util::owner_slice(count, static_cast<std::size_t>(owners), static_cast<std::size_t>(owners) - 1).count;
  return (largest + per_block - 1) / per_block;
}

}  // namespace

std::size_t block_bytes() {
  static const std::size_t bytes = [] {
    const char* env = std::getenv("STRATA_SHM_BLOCK_BYTES");
    const long long value = env ? std::atoll(env) : 0;
    return value >= 4096 ? static_cast<std::size_t>(value) : kBlockBytes;
  }();
  return bytes;
}

std::size_t set_bytes_for(int local_size) {
  return std::max(kSmallBytes, block_bytes()) * static_cast<std::size_t>(local_size);
}

void reduce_scatter(Transport& t, ShmSegment& seg, const void* in, void* out, std::size_t count, DataType dtype,
                    ReduceOp op, int owners) {
  const int me = seg.local_rank(), n = seg.local_size();
  const std::size_t block = segment_block(seg), element = util::element_bytes(dtype);
  const std::size_t per_block = elements_per_block(block, element);
  const auto* src = static_cast<const std::byte*>(in);
  auto* dst = static_cast<std::byte*>(out);
  const std::size_t rounds = rounds_for(count, owners, per_block);
  for (std::size_t b = 0; b < rounds; ++b) {
    const std::uint64_t round = seg.next_round();
    claim_set(t, seg, round);
    // Stage my block of every other owner's slice, at that owner's offset.
    // The first round carries the call check: my digest right after each
    // block, where its owner reads next; in the control block as well only
    // when some ranks own no slice (they read it there).
    std::byte* mine = seg.area(me, round);
    const plan::Fingerprint* check = b == 0 ? t.take_check() : nullptr;
    const std::uint64_t digest = check ? plan::digest(*check) : 0;
    for (int s = 0; s < owners; ++s) {
      if (s == me) continue;
      const util::Slice blk = block_of(count, owners, s, b, per_block);
      std::byte* at = mine + static_cast<std::size_t>(s) * block;
      std::memcpy(at, src + blk.offset * element, blk.count * element);
      if (check) put_digest(at + digest_offset(blk.count * element), digest);
    }
    if (check) {
      seg.fingerprint(me, round) = *check;  // read only to describe a difference
      if (owners < n) seg.digest(me, round) = digest;
    }
    publish<&ShmSegment::staged>(seg, round);
    if (check) {  // every rank sees every digest before any data is used
      wait_for<&ShmSegment::staged>(t, seg, 0, n, round);
      if (me < owners) {
        const util::Slice blk = block_of(count, owners, me, b, per_block);
        const std::size_t at = static_cast<std::size_t>(me) * block + digest_offset(blk.count * element);
        for (int r = 0; r < n; ++r)
          if (r != me && get_digest(seg.area(r, round) + at) != digest) throw_difference(t, seg, round);
      } else {
        verify_check(t, seg, round);  // owners < n: everyone wrote it in the control block too
      }
    }
    if (me < owners) {
      const util::Slice blk = block_of(count, owners, me, b, per_block);
      if (blk.count > 0) {
        wait_for<&ShmSegment::staged>(t, seg, 0, n, round);
        // Own input first, then the others in rank order: a fixed order per
        // slice, and in place works because the first step reads `in` once.
        std::byte* acc = dst + blk.offset * element;
        const std::byte* own = src + blk.offset * element;
        bool first = true;
        for (int r = 0; r < n; ++r) {
          if (r == me) continue;
          const std::byte* theirs = seg.area(r, round) + static_cast<std::size_t>(me) * block;
          reduce_into(acc, first ? own : acc, theirs, blk.count, dtype, op);
          first = false;
        }
        if (first && acc != own) std::memcpy(acc, own, blk.count * element);  // a node of one rank
      }
    }
    publish<&ShmSegment::consumed>(seg, round);
  }
}

void all_gather(Transport& t, ShmSegment& seg, void* out, std::size_t count, DataType dtype, int owners) {
  const int me = seg.local_rank();
  const std::size_t block = segment_block(seg), element = util::element_bytes(dtype), per_block = block / element;
  auto* data = static_cast<std::byte*>(out);
  const std::size_t rounds = rounds_for(count, owners, per_block);
  for (std::size_t b = 0; b < rounds; ++b) {
    const std::uint64_t round = seg.next_round();
    claim_set(t, seg, round);
    if (me < owners) {
      const util::Slice blk = block_of(count, owners, me, b, per_block);
      std::memcpy(seg.area(me, round), data + blk.offset * element, blk.count * element);
    }
    publish<&ShmSegment::staged>(seg, round);
    wait_for<&ShmSegment::staged>(t, seg, 0, owners, round);
    for (int s = 0; s < owners; ++s) {
      if (s == me) continue;
      const util::Slice blk = block_of(count, owners, s, b, per_block);
      std::memcpy(data + blk.offset * element, seg.area(s, round), blk.count * element);
    }
    publish<&ShmSegment::consumed>(seg, round);
  }
}

void small_all_reduce(Transport& t, ShmSegment& seg, const void* in, void* out, std::size_t count, DataType dtype,
                      ReduceOp op) {
  const int me = seg.local_rank(), n = seg.local_size();
  const std::size_t bytes = count * util::element_bytes(dtype);
  const std::uint64_t round = seg.next_round();
  claim_set(t, seg, round);
  std::byte* mine = seg.area(me, round);
  std::memcpy(mine, in, bytes);
  const plan::Fingerprint* check = t.take_check();
  std::uint64_t digest = 0;
  if (check) {
    seg.fingerprint(me, round) = *check;  // read only to describe a difference
    digest = plan::digest(*check);
    put_digest(mine + digest_offset(bytes), digest);
  }
  publish<&ShmSegment::staged>(seg, round);
  wait_for<&ShmSegment::staged>(t, seg, 0, n, round);
  if (check)
    for (int r = 0; r < n; ++r)
      if (get_digest(seg.area(r, round) + digest_offset(bytes)) != digest) throw_difference(t, seg, round);
  // Every rank computes the same thing in the same (rank) order from the
  // staged copies, so all get the same bits without a second round.
  if (n == 1) {
    if (out != in) std::memcpy(out, in, bytes);
  } else {
    reduce_into(out, seg.area(0, round), seg.area(1, round), count, dtype, op);
    for (int r = 2; r < n; ++r) reduce_into(out, out, seg.area(r, round), count, dtype, op);
  }
  publish<&ShmSegment::consumed>(seg, round);
}

void verify(Transport& t, ShmSegment& seg, const plan::Fingerprint& check) {
  const std::uint64_t round = seg.next_round();
  claim_set(t, seg, round);
  publish_check(seg, round, check);
  publish<&ShmSegment::staged>(seg, round);
  wait_for<&ShmSegment::staged>(t, seg, 0, seg.local_size(), round);
  verify_check(t, seg, round);
  publish<&ShmSegment::consumed>(seg, round);
}

void all_reduce(Transport& t, ShmSegment& seg, const void* in, void* out, std::size_t count, DataType dtype,
                ReduceOp op, int owners) {
  const std::size_t bytes = count * util::element_bytes(dtype);
  if (bytes <= kSmallBytes && digest_offset(bytes) + sizeof(std::uint64_t) <= seg.set_bytes()) {
    small_all_reduce(t, seg, in, out, count, dtype, op);
    return;
  }
  reduce_scatter(t, seg, in, out, count, dtype, op, owners);
  all_gather(t, seg, out, count, dtype, owners);
}

}  // namespace strata::host::shm
