#include "host/shm_rounds.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "host/reduce_kernel.hpp"
#include "host/shm_steps.hpp"
#include "util/copy.hpp"
#include "util/element.hpp"
#include "util/slice.hpp"

namespace strata::host::shm {
using namespace steps;
namespace {

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

namespace {

// The reduce-scatter's rounds. root < 0: owner s reduces its slice into its
// own out. root >= 0 (a reduce): only the root's slice goes straight into
// its out; every other owner reduces its block into its own set (in the
// block's place that no peer reads: its own) and publishes `consumed`, and
// the root copies the block from there into its out. The root publishes
// `consumed` only after copying, so no owner reuses that set before.
void owner_rounds(Transport& t, ShmSegment& seg, const void* in, void* out, std::size_t count, DataType dtype,
                  ReduceOp op, int owners, int root) {
  const int me = seg.local_rank(), n = seg.local_size();
  const std::size_t block = segment_block(seg), element = util::element_bytes(dtype);
  const std::size_t per_block = elements_fitting(block, element);
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
      util::copy_bytes(at, src + blk.offset * element, blk.count * element);
      staged_for_peers(t, at, blk.count * element);
      if (check) put_digest(at + digest_offset(blk.count * element), digest);
    }
    if (check) {
      seg.fingerprint(me, round) = *check;  // read only to describe a difference
      if (owners < n) seg.digest(me, round) = digest;
    }
    publish_staged(seg, round);
    if (check) {  // every rank sees every digest before any data is used
      wait_staged(t, seg, 0, n, round);
      if (me < owners) {
        const util::Slice blk = block_of(count, owners, me, b, per_block);
        verify_in_sets(t, seg, round, static_cast<std::size_t>(me) * block + digest_offset(blk.count * element),
                       digest);
      } else {
        verify_control(t, seg, round);  // owners < n: everyone wrote it in the control block too
      }
    }
    if (me < owners) {
      const util::Slice blk = block_of(count, owners, me, b, per_block);
      if (blk.count > 0) {
        wait_staged(t, seg, 0, n, round);
        // Own input first, then the others in rank order: a fixed order per
        // slice, and in place works because the first step reads `in` once.
        std::byte* acc = root < 0 || me == root ? dst + blk.offset * element
                                                : mine + static_cast<std::size_t>(me) * block;
        const std::byte* own = src + blk.offset * element;
        bool first = true;
        for (int r = 0; r < n; ++r) {
          if (r == me) continue;
          const std::byte* theirs = seg.area(r, round) + static_cast<std::size_t>(me) * block;
          reduce_into(acc, first ? own : acc, theirs, blk.count, dtype, op);
          first = false;
        }
        if (first && acc != own) util::copy_bytes(acc, own, blk.count * element);  // a node of one rank
      }
    }
    if (me == root) {
      for (int s = 0; s < owners; ++s) {
        const util::Slice blk = block_of(count, owners, s, b, per_block);
        if (s == me || blk.count == 0) continue;
        wait_consumed(t, seg, s, s + 1, round);  // its reduction of this block is done
        util::copy_bytes(dst + blk.offset * element, seg.area(s, round) + static_cast<std::size_t>(s) * block,
                    blk.count * element);
      }
    }
    publish_consumed(seg, round);
  }
}

}  // namespace

void reduce_scatter(Transport& t, ShmSegment& seg, const void* in, void* out, std::size_t count, DataType dtype,
                    ReduceOp op, int owners) {
  owner_rounds(t, seg, in, out, count, dtype, op, owners, -1);
}

void reduce_scatter_to_root(Transport& t, ShmSegment& seg, const void* in, void* out, std::size_t count,
                            DataType dtype, ReduceOp op, int root) {
  owner_rounds(t, seg, in, out, count, dtype, op, seg.local_size(), root);
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
      util::copy_bytes(seg.area(me, round), data + blk.offset * element, blk.count * element);
      staged_for_peers(t, seg.area(me, round), blk.count * element);
    }
    publish_staged(seg, round);
    wait_staged(t, seg, 0, owners, round);
    for (int s = 0; s < owners; ++s) {
      if (s == me) continue;
      const util::Slice blk = block_of(count, owners, s, b, per_block);
      util::copy_bytes(data + blk.offset * element, seg.area(s, round), blk.count * element);
    }
    publish_consumed(seg, round);
  }
}

void all_gather_blocks(Transport& t, ShmSegment& seg, const void* in, void* out, std::size_t count, DataType dtype) {
  const int me = seg.local_rank(), n = seg.local_size();
  const std::size_t element = util::element_bytes(dtype), bytes = count * element;
  const std::size_t per_round = segment_block(seg) / element * element;
  const auto* mine = static_cast<const std::byte*>(in);
  auto* all = static_cast<std::byte*>(out);
  const bool in_place = mine == all + static_cast<std::size_t>(me) * bytes;
  for (std::size_t first = 0; first < bytes; first += per_round) {
    const std::size_t chunk = std::min(per_round, bytes - first);
    const std::uint64_t round = seg.next_round();
    claim_set(t, seg, round);
    // Small blocks travel in the line that carries `staged` (and the
    // check), blocks up to kSmallBytes in RoundData's rotating slots;
    // larger ones at the start of each set, so that two sets' worth stays
    // in cache round after round (a rotation over the whole set would not).
    const RoundData slots(seg, round, chunk);
    const bool rotate = chunk <= kSmallBytes;
    auto staged = [&](int r) { return rotate ? slots.of(r) : seg.area(r, round); };
    util::copy_bytes(staged(me), mine + first, chunk);
    staged_for_peers(t, staged(me), chunk);
    const plan::Fingerprint* check = first == 0 ? t.take_check() : nullptr;
    if (check) publish_check(seg, round, *check);
    publish_staged(seg, round);
    wait_staged(t, seg, 0, n, round);
    if (check) verify_control(t, seg, round);  // before anything is written to `out`
    for (int r = 0; r < n; ++r) {
      std::byte* to = all + static_cast<std::size_t>(r) * bytes + first;
      if (r != me) util::copy_bytes(to, staged(r), chunk);
      else if (!in_place) util::copy_bytes(to, mine + first, chunk);
    }
    publish_consumed(seg, round);
  }
}

void small_all_reduce(Transport& t, ShmSegment& seg, const void* in, void* out, std::size_t count, DataType dtype,
                      ReduceOp op) {
  const int n = seg.local_size();
  const std::size_t bytes = count * util::element_bytes(dtype);
  const std::uint64_t round = seg.next_round();
  claim_set(t, seg, round);
  const RoundData data(seg, round, bytes);
  util::copy_bytes(data.of(seg.local_rank()), in, bytes);
  staged_for_peers(t, data.of(seg.local_rank()), bytes);
  const plan::Fingerprint* check = t.take_check();
  std::uint64_t digest = 0;
  if (check) {
    seg.fingerprint(seg.local_rank(), round) = *check;  // read only to describe a difference
    digest = plan::digest(*check);
    data.put_check(digest);
  }
  publish_staged(seg, round);
  wait_staged(t, seg, 0, n, round);
  if (check) data.verify(t, digest);
  // Every rank computes the same thing in the same (rank) order from the
  // staged copies, so all get the same bits without a second round.
  if (n == 1) {
    if (out != in) util::copy_bytes(out, in, bytes);
  } else {
    reduce_into(out, data.of(0), data.of(1), count, dtype, op);
    for (int r = 2; r < n; ++r) reduce_into(out, out, data.of(r), count, dtype, op);
  }
  publish_consumed(seg, round);
}

void verify(Transport& t, ShmSegment& seg, const plan::Fingerprint& check) {
  const std::uint64_t round = seg.next_round();
  claim_set(t, seg, round);
  publish_check(seg, round, check);
  publish_staged(seg, round);
  wait_staged(t, seg, 0, seg.local_size(), round);
  verify_control(t, seg, round);
  publish_consumed(seg, round);
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
