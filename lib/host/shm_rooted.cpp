#include "host/shm_rooted.hpp"

#include <algorithm>
#include <cstring>

#include "host/reduce_kernel.hpp"
#include "host/shm_rounds.hpp"
#include "host/shm_steps.hpp"
#include "util/copy.hpp"
#include "util/element.hpp"

namespace strata::host::shm {
using namespace steps;
namespace {

// The gathered reduce: a round per `per_round` elements, each rank's chunk
// in its whole set. The call check rides in the first round: every rank's
// digest right after its chunk (the root's too, with no data before it).
void gathered_reduce(Transport& t, ShmSegment& seg, const void* in, void* out, std::size_t count, DataType dtype,
                     ReduceOp op, int root) {
  const int me = seg.local_rank(), n = seg.local_size();
  const std::size_t element = util::element_bytes(dtype);
  const std::size_t per_round = elements_fitting(seg.set_bytes(), element);
  const auto* src = static_cast<const std::byte*>(in);
  auto* dst = static_cast<std::byte*>(out);
  for (std::size_t first = 0; first < count; first += per_round) {
    const std::size_t chunk = std::min(per_round, count - first), bytes = chunk * element;
    const std::uint64_t round = seg.next_round();
    const plan::Fingerprint* check = first == 0 ? t.take_check() : nullptr;
    if (me != root || check) claim_set(t, seg, round);  // the root writes its set only for the check
    const RoundData data(seg, round, bytes);
    if (me != root) {
      util::copy_bytes(data.of(me), src + first * element, bytes);
      staged_for_peers(t, data.of(me), bytes);
    }
    const std::uint64_t digest = check ? plan::digest(*check) : 0;
    if (check) {
      seg.fingerprint(me, round) = *check;  // read only to describe a difference
      data.put_check(digest);
    }
    publish_staged(seg, round);
    if (check) {  // every rank sees every digest before the root uses any data
      wait_staged(t, seg, 0, n, round);
      data.verify(t, digest);
    }
    if (me == root) {
      wait_staged(t, seg, 0, n, round);
      std::byte* acc = dst + first * element;
      const std::byte* own = src + first * element;
      bool first_step = true;
      for (int r = 0; r < n; ++r) {
        if (r == me) continue;
        reduce_into(acc, first_step ? own : acc, data.of(r), chunk, dtype, op);
        first_step = false;
      }
      if (first_step && acc != own) util::copy_bytes(acc, own, bytes);  // a node of one rank
    }
    publish_consumed(seg, round);
  }
}

}  // namespace

void reduce(Transport& t, ShmSegment& seg, const void* in, void* out, std::size_t count, DataType dtype,
            ReduceOp op, int root) {
  if (seg.local_size() <= 2 || count * util::element_bytes(dtype) <= kSmallBytes)
    gathered_reduce(t, seg, in, out, count, dtype, op, root);
  else
    reduce_scatter_to_root(t, seg, in, out, count, dtype, op, root);
}

void broadcast(Transport& t, ShmSegment& seg, void* data, std::size_t bytes, int root) {
  const int me = seg.local_rank(), n = seg.local_size();
  // A block per round (not the whole set): the root's copy of block b + 1
  // overlaps the others' copies of block b while both stay in cache.
  const std::size_t per_round = segment_block(seg);
  auto* buffer = static_cast<std::byte*>(data);
  for (std::size_t first = 0; first < bytes; first += per_round) {
    const std::size_t chunk = std::min(per_round, bytes - first);
    const std::uint64_t round = seg.next_round();
    const plan::Fingerprint* check = first == 0 ? t.take_check() : nullptr;
    // Only the root writes its set; the check goes in the control block.
    if (me == root || check) claim_set(t, seg, round);
    const RoundData staged(seg, round, chunk);
    if (me == root) {
      util::copy_bytes(staged.of(me), buffer + first, chunk);
      staged_for_peers(t, staged.of(me), chunk);
    }
    if (check) publish_check(seg, round, *check);
    publish_staged(seg, round);
    if (check) {
      wait_staged(t, seg, 0, n, round);
      verify_control(t, seg, round);
    }
    if (me != root) {
      wait_staged(t, seg, root, root + 1, round);
      util::copy_bytes(buffer + first, staged.of(root), chunk);
    }
    publish_consumed(seg, round);
  }
}

}  // namespace strata::host::shm
