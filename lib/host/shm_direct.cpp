#include "host/shm_direct.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <exception>
#include <vector>

#include "host/cma.hpp"
#include "host/reduce_kernel.hpp"
#include "host/shm_steps.hpp"
#include "util/copy.hpp"
#include "util/element.hpp"
#include "util/slice.hpp"
#include "util/where.hpp"
#include "strata/errors.hpp"

namespace strata::host::shm::direct {
using namespace steps;
namespace {

std::atomic<std::uint64_t> direct_calls{0};

// What a rank exposes for one call (addresses in its own address space),
// in its staged line of the call's first round: one line transfer brings a
// peer the counter, the digest and these.
struct Exposed {
  std::uint64_t in = 0;       // its input
  std::uint64_t out = 0;      // its output (all_reduce; reduce: the root's)
  std::uint64_t scratch = 0;  // reduce: a non-root owner's reduced slice
};
static_assert(sizeof(Exposed) <= ShmSegment::kLineBytes);

std::uint64_t address(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }
const void* pointer(std::uint64_t a) { return reinterpret_cast<const void*>(static_cast<std::uintptr_t>(a)); }

// One direct call: round A (expose), the reads, the marks on leaving.
class Call {
 public:
  Call(Transport& t, ShmSegment& seg)
      : t_(t), seg_(seg), me_(seg.local_rank()), n_(seg.local_size()), exceptions_(std::uncaught_exceptions()) {
    direct_calls.fetch_add(1, std::memory_order_relaxed);
  }
  // Leaving by an exception after exposing my buffers: say so before the
  // caller gets them back (see ShmSegment::left). The fence keeps the
  // caller's later writes to them after the mark.
  ~Call() {
    if (first_ != 0 && std::uncaught_exceptions() > exceptions_) {
      seg_.left(me_).store(first_, std::memory_order_seq_cst);
      std::atomic_thread_fence(std::memory_order_seq_cst);
    }
  }
  Call(const Call&) = delete;
  Call& operator=(const Call&) = delete;

  // Round A: publish `mine` (and the call check), then wait until the ranks
  // in [from, to) published theirs, and every rank when the call carries a
  // check, whose digests are compared before anything is read.
  void expose(const Exposed& mine, int from, int to) {
    const std::uint64_t round = seg_.next_round();
    claim_set(t_, seg_, round);  // my staged line of this parity is free
    std::memcpy(seg_.line_data(me_, round), &mine, sizeof mine);
    const plan::Fingerprint* check = t_.take_check();
    if (check) publish_check(seg_, round, *check);
    publish_staged(seg_, round);
    first_ = round;
    if (check) {
      wait_staged(t_, seg_, 0, n_, round);
      verify_control(t_, seg_, round);
    } else if (from < to) {
      wait_staged(t_, seg_, from, to, round);
    }
  }

  // What `rank` exposed. Its line stays put until this call ends: the rank
  // rewrites it only in a later call, after every rank's consumed of this
  // one (or, for a broadcast's non-root, nobody reads it).
  Exposed of(int rank) const {
    Exposed e;
    std::memcpy(&e, seg_.line_data(rank, first_), sizeof e);
    return e;
  }

  pid_t pid(int rank) const { return seg_.pid(rank); }
  int rank() const { return me_; }
  int ranks() const { return n_; }

  // Round B: publish that my part is done; wait for [from, to)'s.
  std::uint64_t second() {
    second_ = seg_.next_round();
    publish_staged(seg_, second_);
    return second_;
  }
  void wait_second(int from, int to) { wait_staged(t_, seg_, from, to, second_); }

  // The end: after my last read, make sure no rank I read ([read_from,
  // read_to)) left the call meanwhile (what I read could be garbage);
  // publish consumed of the last round, then wait until the ranks that read
  // my memory ([wait_from, wait_to)) finished reading it.
  void finish(int read_from, int read_to, int wait_from, int wait_to) {
    done_reading(read_from, read_to);
    wait_readers(wait_from, wait_to);
  }
  // finish in two steps, for a rank with work left after its last read
  // (the root of a reduce): the ranks waiting for my consumed go on while I
  // reduce what I already read. done_reading once, then wait_readers.
  void done_reading(int read_from, int read_to) {
    if (released_) return;
    check_nobody_left(read_from, read_to);
    publish_consumed(seg_, last_round());
    released_ = true;
  }
  void wait_readers(int wait_from, int wait_to) {
    if (wait_from < wait_to)
      wait_consumed(t_, seg_, wait_from, wait_to, last_round(), util::Backoff::Patience::peer_reads);
  }

 private:
  void check_nobody_left(int from, int to) {
    if (from >= to) return;
    std::atomic_thread_fence(std::memory_order_seq_cst);  // my reads (syscalls) before the marks' loads
    std::vector<int> gone;
    for (int r = from; r < to; ++r)
      if (r != me_ && seg_.left(r).load(std::memory_order_acquire) >= first_) gone.push_back(r);
    if (gone.empty()) return;
    throw DeadlineExceeded(
        fmt::format("strata [{}]: {} #{} ({} bytes, algorithm {}): local rank(s) {} left the call (a timeout or an "
                    "error there) while this rank was still reading their buffers, so what it read is void. The "
                    "communicator is now unusable",
                    util::where(), t_.info().collective, t_.info().sequence, t_.info().bytes, t_.info().algorithm,
                    fmt::join(gone, ",")),
        gone);
  }

  Transport& t_;
  ShmSegment& seg_;
  int me_, n_;
  int exceptions_;
  std::uint64_t last_round() const { return second_ ? second_ : first_; }

  std::uint64_t first_ = 0, second_ = 0;
  bool released_ = false;
};

// The operands of the reductions of one call: my input, and every peer's
// input read through cross-memory reads, block by block, into the block's
// own output when nothing is there yet, else into a cache-sized scratch.
struct Operands {
  Call& call;
  int me, n;
  const std::byte* in;  // my input
  DataType dtype;
  ReduceOp op;
  std::size_t element;
  std::byte* pull;  // kPullBytes (Transport::scratch, kPullSlot)
  // When true, the call's reads end with this range: right after the last
  // block's last read, Call::done_reading releases the ranks read (every
  // rank), before that block is reduced.
  bool release_after_reads = false;
};

// acc[0..k) = in_first op in_r op ... over every rank r other than `first`
// in rank order, on the k elements at element offset `at` of every rank's
// input: peers' blocks read, mine used in place. `acc` may be my input
// block (in place) only when first == me: that block is then read by the
// first reduction, before anything overwrites it.
// `last_block`: with o.release_after_reads, the read of the last peer
// operand releases the ranks read (Call::done_reading) before reducing it.
// The first peer block read lands in `acc` itself unless acc is my input:
// the reduction then reads it where it writes, instead of writing a
// scratch block and reading it back (2-rank reduce, 256-512 KiB: about a
// tenth of the time, measured when the change was made; git log has it).
void reduce_block(const Operands& o, int first, std::size_t at, std::size_t k, std::byte* acc, bool last_block) {
  const std::size_t bytes = k * o.element, offset = at * o.element;
  // The peer read last (peers are read in rank order after `first`): -1
  // when nothing is released here.
  int release_after = -1;
  if (last_block && o.release_after_reads) {
    release_after = first == o.me ? -1 : first;
    for (int r = 0; r < o.n; ++r)
      if (r != first && r != o.me) release_after = r;
  }
  const std::byte* own = o.in + offset;
  bool acc_empty = acc != own;  // holds nothing a reduction still reads
  auto operand = [&](int r) -> const std::byte* {
    if (r == o.me) return own;
    std::byte* into = acc_empty ? acc : o.pull;
    acc_empty = false;
    cma::read(o.call.pid(r), static_cast<const std::byte*>(pointer(o.call.of(r).in)) + offset, into, bytes, r);
    if (r == release_after) o.call.done_reading(0, o.n);
    return into;
  };
  const std::byte* a = operand(first);
  bool reduced = false;
  for (int r = 0; r < o.n; ++r) {
    if (r == first) continue;
    const std::byte* b = operand(r);
    reduce_into(acc, reduced ? acc : a, b, k, o.dtype, o.op);
    reduced = true;
  }
  if (!reduced && acc != a) util::copy_bytes(acc, a, bytes);
}

// reduce_block over `slice`, block by block (kPullBytes), into `acc` (the
// slice's first element).
void reduce_range(const Operands& o, int first, util::Slice slice, std::byte* acc) {
  const std::size_t per_block = kPullBytes / o.element;
  for (std::size_t done = 0; done < slice.count; done += per_block) {
    const std::size_t k = std::min(per_block, slice.count - done);
    reduce_block(o, first, slice.offset + done, k, acc + done * o.element, done + k == slice.count);
  }
}


// all_reduce, replicated: every rank reduces every slice itself, in its
// owner's order (so the bits equal the owners' shape and the rounds'). No
// rank writes a byte any peer reads, except in place: then my input is
// copied first and the peers read the copy.
void replicated_all_reduce(Transport& t, ShmSegment& seg, const void* in, void* out, std::size_t count,
                           DataType dtype, ReduceOp op, int owners) {
  const int me = seg.local_rank(), n = seg.local_size();
  const std::size_t element = util::element_bytes(dtype);
  auto* dst = static_cast<std::byte*>(out);
  const auto* mine = static_cast<const std::byte*>(in);
  if (in == out) {
    std::byte* copy = t.scratch(kOwnSlot, count * element);
    util::copy_bytes(copy, in, count * element);
    mine = copy;
  }
  std::byte* pull = t.scratch(kPullSlot, kPullBytes);
  Call call(t, seg);
  const Operands o{call, me, n, mine, dtype, op, element, pull};
  call.expose({address(mine), 0, 0}, 0, n);
  for (int s = 0; s < owners; ++s) {
    const util::Slice slice = util::owner_slice(count, static_cast<std::size_t>(owners), static_cast<std::size_t>(s));
    reduce_range(o, s, slice, dst + slice.offset * element);
  }
  call.finish(0, n, 0, n);
}

// Where an owner's final slice is: in its out at the slice's offset (an
// all_reduce), or at the start of its scratch (a reduce's non-root owner).
enum class SliceAt { out, scratch };

// After every owner's staged(B): every other owner's final slice straight
// into my out, starting after me so that the owners are not all read in
// the same order.
void read_owner_slices(const Call& call, std::byte* dst, std::size_t count, std::size_t element, int owners,
                       SliceAt at) {
  const int me = call.rank();
  for (int k = 0; k < owners; ++k) {
    const int s = (me + 1 + k) % owners;
    if (s == me) continue;
    const util::Slice slice = util::owner_slice(count, static_cast<std::size_t>(owners), static_cast<std::size_t>(s));
    if (slice.count == 0) continue;
    const void* from = at == SliceAt::out ? util::element_at(pointer(call.of(s).out), slice.offset, element)
                                          : pointer(call.of(s).scratch);
    cma::read(call.pid(s), from, dst + slice.offset * element, slice.count * element, s);
  }
}

// all_reduce, owners: owner s reduces slice s into its out, then every rank
// reads the other owners' slices from their outs.
void owners_all_reduce(Transport& t, ShmSegment& seg, const void* in, void* out, std::size_t count, DataType dtype,
                       ReduceOp op, int owners) {
  const int me = seg.local_rank(), n = seg.local_size();
  const std::size_t element = util::element_bytes(dtype);
  auto* dst = static_cast<std::byte*>(out);
  std::byte* pull = t.scratch(kPullSlot, kPullBytes);
  Call call(t, seg);
  const Operands o{call, me, n, static_cast<const std::byte*>(in), dtype, op, element, pull};
  call.expose({address(in), address(out), 0}, 0, n);
  if (me < owners) {
    const util::Slice mine = util::owner_slice(count, static_cast<std::size_t>(owners), static_cast<std::size_t>(me));
    reduce_range(o, me, mine, dst + mine.offset * element);
  }
  call.second();
  call.wait_second(0, owners);
  read_owner_slices(call, dst, count, element, owners, SliceAt::out);
  call.finish(0, n, 0, n);
}

// Reductions over every rank's operand at once (GatheredReduction): the
// elements [from, from + count) of every rank's input, mine in place and
// each peer's read block by block into its own part of the pull scratch
// (kPullBytes in all), reduced into `out`.
class AllOperands {
 public:
  AllOperands(Transport& t, const Call& call, const void* in, std::size_t element, const GatheredReduction& reduction)
      : call_(call), me_(call.rank()), n_(call.ranks()), in_(static_cast<const std::byte*>(in)), element_(element),
        reduction_(reduction) {
    const std::size_t peers = std::max<std::size_t>(1, static_cast<std::size_t>(n_ - 1));
    per_block_ = std::max<std::size_t>(1, kPullBytes / peers / element);
    pull_ = t.scratch(kPullSlot, peers * per_block_ * element);
    operands_ = reinterpret_cast<const std::byte**>(t.scratch(kOperandsSlot, static_cast<std::size_t>(n_) * sizeof(void*)));
  }

  void reduce(std::size_t from, std::size_t count, std::byte* out) const {
    for (std::size_t done = 0; done < count; done += per_block_) {
      const std::size_t k = std::min(per_block_, count - done), offset = (from + done) * element_;
      std::byte* into = pull_;
      for (int r = 0; r < n_; ++r) {
        if (r == me_) {
          operands_[r] = in_ + offset;
          continue;
        }
        cma::read(call_.pid(r), static_cast<const std::byte*>(pointer(call_.of(r).in)) + offset, into, k * element_, r);
        operands_[r] = into;
        into += per_block_ * element_;
      }
      reduction_.reduce(operands_, n_, k, out + done * element_);
    }
  }

 private:
  const Call& call_;
  int me_, n_;
  const std::byte* in_;
  std::size_t element_;
  const GatheredReduction& reduction_;
  std::size_t per_block_ = 1;
  std::byte* pull_ = nullptr;
  const std::byte** operands_ = nullptr;
};

// reduce, gathered: the root reduces everything, its own input first, then
// the others in rank order (the order of shm_rooted's gathered reduce).
void gathered_reduce(Transport& t, ShmSegment& seg, const void* in, void* out, std::size_t count, DataType dtype,
                     ReduceOp op, int root) {
  const int me = seg.local_rank(), n = seg.local_size();
  Call call(t, seg);
  if (me != root) {
    call.expose({address(in), 0, 0}, 0, 0);
    call.finish(0, 0, root, root + 1);  // the root read my input
    return;
  }
  std::byte* pull = t.scratch(kPullSlot, kPullBytes);
  // The others wait only for my reads, not for my last block's reduction.
  const Operands o{call, me, n, static_cast<const std::byte*>(in), dtype, op, util::element_bytes(dtype),
                   pull, true};
  call.expose({}, 0, n);
  reduce_range(o, me, {0, count}, static_cast<std::byte*>(out));
  call.finish(0, n, 0, 0);  // releases here only when nothing was read (count 0, or a node of one)
}

// reduce, owners: every rank reduces its slice (the root's straight into its
// out, the others' into scratch of their own), the root reads the others'.
void owners_reduce(Transport& t, ShmSegment& seg, const void* in, void* out, std::size_t count, DataType dtype,
                   ReduceOp op, int root) {
  const int me = seg.local_rank(), n = seg.local_size();
  const std::size_t element = util::element_bytes(dtype);
  auto* dst = static_cast<std::byte*>(out);
  const util::Slice mine = util::owner_slice(count, static_cast<std::size_t>(n), static_cast<std::size_t>(me));
  std::byte* result = me == root ? dst + mine.offset * element : t.scratch(kOwnSlot, mine.count * element);
  std::byte* pull = t.scratch(kPullSlot, kPullBytes);
  Call call(t, seg);
  const Operands o{call, me, n, static_cast<const std::byte*>(in), dtype, op, element, pull};
  call.expose({address(in), 0, me == root ? 0 : address(result)}, 0, n);
  reduce_range(o, me, mine, result);
  call.second();
  if (me == root) {
    call.wait_second(0, n);
    read_owner_slices(call, dst, count, element, n, SliceAt::scratch);
  }
  call.finish(0, n, 0, n);
}

}  // namespace

void all_reduce(Transport& t, ShmSegment& seg, const void* in, void* out, std::size_t count, DataType dtype,
                ReduceOp op, int owners) {
  // On a crowded node (only with STRATA_CMA=1) the ranks take turns on the
  // cores, so the replicated shape's n-fold arithmetic is paid n / cores
  // times over.
  const bool replicated = count * util::element_bytes(dtype) < kAllReduceOwnersBytes && !seg.crowded();
  if (replicated)
    replicated_all_reduce(t, seg, in, out, count, dtype, op, owners);
  else
    owners_all_reduce(t, seg, in, out, count, dtype, op, owners);
}

void all_reduce_gathered(Transport& t, ShmSegment& seg, const void* in, void* out, std::size_t count,
                         std::size_t element, const GatheredReduction& reduction) {
  const int me = seg.local_rank(), n = seg.local_size();
  auto* dst = static_cast<std::byte*>(out);
  Call call(t, seg);
  const AllOperands operands(t, call, in, element, reduction);
  call.expose({address(in), address(out), 0}, 0, n);
  const util::Slice mine = util::owner_slice(count, static_cast<std::size_t>(n), static_cast<std::size_t>(me));
  operands.reduce(mine.offset, mine.count, dst + mine.offset * element);
  call.second();
  call.wait_second(0, n);
  read_owner_slices(call, dst, count, element, n, SliceAt::out);
  call.finish(0, n, 0, n);
}

void reduce_scatter_gathered(Transport& t, ShmSegment& seg, const void* in, void* out, std::size_t count,
                             std::size_t element, const GatheredReduction& reduction) {
  const int me = seg.local_rank(), n = seg.local_size();
  Call call(t, seg);
  const AllOperands operands(t, call, in, element, reduction);
  call.expose({address(in), 0, 0}, 0, n);
  operands.reduce(static_cast<std::size_t>(me) * count, count, static_cast<std::byte*>(out));
  call.finish(0, n, 0, n);  // everyone read its block of my input
}

void reduce_gathered(Transport& t, ShmSegment& seg, const void* in, void* out, std::size_t count,
                     std::size_t element, int root, const GatheredReduction& reduction) {
  const int me = seg.local_rank(), n = seg.local_size();
  if (count * element < kReduceGatheredOwnersBytes) {  // the root sums everything
    Call call(t, seg);
    if (me != root) {
      call.expose({address(in), 0, 0}, 0, 0);
      call.finish(0, 0, root, root + 1);  // the root read my input
      return;
    }
    const AllOperands operands(t, call, in, element, reduction);
    call.expose({}, 0, n);
    operands.reduce(0, count, static_cast<std::byte*>(out));
    call.finish(0, n, 0, 0);
    return;
  }
  auto* dst = static_cast<std::byte*>(out);
  const util::Slice mine = util::owner_slice(count, static_cast<std::size_t>(n), static_cast<std::size_t>(me));
  std::byte* result = me == root ? dst + mine.offset * element : t.scratch(kOwnSlot, mine.count * element);
  Call call(t, seg);
  const AllOperands operands(t, call, in, element, reduction);
  call.expose({address(in), 0, me == root ? 0 : address(result)}, 0, n);
  operands.reduce(mine.offset, mine.count, result);
  call.second();
  if (me == root) {
    call.wait_second(0, n);
    read_owner_slices(call, dst, count, element, n, SliceAt::scratch);
  }
  call.finish(0, n, 0, n);
}

void reduce(Transport& t, ShmSegment& seg, const void* in, void* out, std::size_t count, DataType dtype,
            ReduceOp op, int root) {
  const bool gathered = seg.local_size() <= 2 || count * util::element_bytes(dtype) < kReduceOwnersBytes;
  if (gathered)
    gathered_reduce(t, seg, in, out, count, dtype, op, root);
  else
    owners_reduce(t, seg, in, out, count, dtype, op, root);
}

void broadcast(Transport& t, ShmSegment& seg, void* data, std::size_t bytes, int root) {
  const int me = seg.local_rank(), n = seg.local_size();
  Call call(t, seg);
  if (me == root) {
    call.expose({address(data), 0, 0}, 0, 0);
    call.finish(0, 0, 0, n);  // everyone read my buffer
    return;
  }
  call.expose({}, root, root + 1);
  cma::read(call.pid(root), pointer(call.of(root).in), data, bytes, root);
  call.finish(root, root + 1, 0, 0);  // nobody reads mine
}

void all_gather_blocks(Transport& t, ShmSegment& seg, const void* in, void* out, std::size_t bytes) {
  const int me = seg.local_rank(), n = seg.local_size();
  auto* all = static_cast<std::byte*>(out);
  std::byte* own = all + static_cast<std::size_t>(me) * bytes;
  Call call(t, seg);
  call.expose({address(in), 0, 0}, 0, n);  // (with a check: compared before anything is read or written)
  for (int r = 0; r < n; ++r)
    if (r != me) cma::read(call.pid(r), pointer(call.of(r).in), all + static_cast<std::size_t>(r) * bytes, bytes, r);
  call.done_reading(0, n);
  if (own != in) util::copy_bytes(own, in, bytes);  // while the peers still read my input
  call.wait_readers(0, n);  // everyone read my input
}

std::uint64_t calls() { return direct_calls.load(std::memory_order_relaxed); }

void recheck_placement(Transport& t, ShmSegment& seg) {
  const std::uint64_t sequence = t.info().sequence;
  const auto verdict = shm::recheck_placement(t, seg.local_rank(), seg.recheck_lines(), sequence, seg.placement());
  seg.rechecked(sequence, verdict ? std::optional<Placement>(verdict->placement) : std::nullopt);
}

}  // namespace strata::host::shm::direct
