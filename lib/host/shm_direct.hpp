// The direct (single-copy) path of the shared-memory collectives: ranks
// read each other's user buffers with cross-memory attach (host/cma.hpp,
// process_vm_readv) instead of passing every byte through a shared set
// (shm_rounds.hpp: one copy into the sender's set, one out of it). Used
// from a size on (k*Bytes below) when the segment says every rank can
// (ShmSegment::direct()); the rounds stay for small messages and wherever
// the kernel forbids the reads.
//
// Pull only: a rank reads its peers' memory and writes only its own, so a
// peer that is late can never write into a rank that already returned.
// Peers read my `in`, `out` and scratch, so no rank returns before every
// peer said it finished reading (its `consumed`), except broadcast's
// non-roots, whose buffers nobody reads.
//
// Rounds (the segment's numbering, counters and deadlines, as in
// shm_rounds.hpp):
//   A: each rank publishes, in its staged line of round A, the addresses it
//      exposes for this call (and the call check's digest when the call
//      carries one), then waits for every rank's staged(A) (a broadcast
//      without a check: non-roots wait for the root only) and compares the
//      digests: Mismatch on every rank before any data moves.
//   all_reduce: owner s (s < owners) reduces util::owner_slice s: its own
//      input first, then every other rank's in rank order (the order of
//      shm::reduce_scatter, so the bits equal the rounds'), pulling each
//      peer's input block by block (kPullBytes, cache-sized) into its own
//      out (the first peer's block, when out is not its input) or scratch,
//      and reducing straight into its own out. B = A + 1: staged(B) says
//      "my slice of out is final". After every owner's staged(B), each rank
//      pulls every other owner's slice straight into its out, publishes
//      consumed(B) and waits for every rank's consumed(B).
//      In place (in == out) is safe: a rank writes out[slice s] for s other
//      than its own only after owner s's staged(B), i.e. after s finished
//      reading that slice of its input; its own slice only it reads.
//   by a GatheredReduction (all_reduce, reduce_scatter, reduce): as the
//      owners' all_reduce and reduce (every local rank an owner) and the
//      blocks' owners of reduce_scatter, but each block of a
//      rank's part is read from every peer (each into its own part of the
//      scratch) and reduced all at once. reduce_scatter's in place is
//      safe: a rank writes only its own block, which no peer reads.
//   reduce, gathered (two ranks, or below kReduceOwnersBytes): the root
//      pulls every peer's input block by block and reduces it into its out;
//      it publishes consumed(A) right after its last read, so the others
//      return while it reduces the last block.
//   reduce, owners: the same owners (every local rank owns a slice); the root's
//      slice goes straight into the root's out, another owner's into a
//      scratch of its own, which the root pulls after that owner's
//      staged(B). Non-roots never write `out`.
//   broadcast: each non-root pulls the root's buffer in one read and
//      publishes consumed(A); the root waits for every consumed(A).
//   all_gather: each rank pulls every peer's input into that peer's block
//      of its out, publishes consumed(A), copies its own block and waits
//      for every consumed(A).
//
// A rank that leaves a direct call by an exception after exposing its
// buffers (its deadline passed, a read failed) marks that in its control
// block (ShmSegment::left) before returning; a peer that read its memory
// checks the marks after its last read and raises DeadlineExceeded instead
// of returning what it read (the buffers may have changed under the read).
#pragma once

#include <cstddef>
#include <cstdint>

#include "host/shm_direct_sizes.hpp"
#include "host/shm_segment.hpp"
#include "host/transport.hpp"
#include "strata/types.hpp"

namespace strata::host::shm::direct {

// Which message sizes each collective reads directly, where the segment
// says it may (ShmSegment::direct(): the kernel allows the reads, and the
// ranks do not sit near each other, see shm_placement.hpp), is the
// segment's too: ShmSegment::direct_sizes(), chosen from what a read costs
// on the node (shm_direct_sizes.hpp).

// The most local ranks for which the direct path runs unless STRATA_CMA=1:
// with more, every rank reads every peer (broadcast: every non-root reads
// the root at once; a replicated all-reduce: n (n - 1) reads of the whole
// message). On a 16-core Intel Xeon VM, ranks far apart, 4 and 8 ranks,
// 64-256 KiB, the rounds ran all-reduce at 1.44-2.02x MPI's speed, reduce
// at 1.58-3.94x and broadcast at 1.98-3.11x, the direct reads at
// 0.30-0.84x, 0.75-1.63x and 0.68-1.36x; only the 1-4 MiB all-reduce at 4
// ranks went the other way (1.64-2.09x against 1.42-1.61x;
// docs/ALGORITHMS.md, "Near and far ranks").
constexpr int kMostLocalRanks = 2;
// From which size all_reduce runs as owners (reduce-scatter + all-gather)
// rather than replicated, and reduce (on three or more ranks) as owners
// rather than gathered. Where the local ranks outnumber the CPUs they may
// run on (ShmSegment::crowded; the direct path runs there only with
// STRATA_CMA=1, see cma.hpp), all_reduce runs as owners at every direct
// size: replicated, each rank reduces the whole message, and ranks that
// take turns on a core pay for that in turn (OSU osu_allreduce, 4 ranks on
// 2 cores, 3 runs of each: 64 KiB 50-53 us as owners against 58-120 us
// replicated, 128 KiB 75-81 against 100-185, 256 KiB 134-155 against
// 267-380).
constexpr std::size_t kAllReduceOwnersBytes = 512 * 1024;
constexpr std::size_t kReduceOwnersBytes = 512 * 1024;
// The same for reduce_gathered: below it the root sums every element
// itself and the others leave once it read their input (f32 exact sum, 2
// ranks, strata-bench median of 3, root alone against owners: 16 KiB 3.6
// against 8.4 us, 64 KiB 11.3 against 11.9, 128 KiB 21.3 against 20.2).
constexpr std::size_t kReduceGatheredOwnersBytes = 128 * 1024;

// Bytes per read of a peer's input before reducing it: each
// process_vm_readv costs a system call and its page walk, so blocks are
// large (2-rank reduce, strata-bench -a pscpu, median of 3: 256 KiB in
// 17.6 us with 256 KiB blocks, 19.5 us with 64 KiB, 26.7 us with 16 KiB).
constexpr std::size_t kPullBytes = 256 * 1024;

// Workspace slots of the direct path (Transport::scratch): a pulled block
// that cannot land in the output, memory of mine that peers read (a
// reduce's slice on a non-root owner; an in-place all-reduce's copy of its
// input), and the gathered all_reduce's operand pointers.
constexpr std::size_t kPullSlot = 2;
constexpr std::size_t kOwnSlot = 3;
constexpr std::size_t kOperandsSlot = 4;

// Whether a message of `bytes` bytes takes the direct path, given the
// collective's range (one of seg.direct_sizes()). The same on every local
// rank for the same call.
inline bool takes(const ShmSegment& seg, std::size_t bytes, Range range) { return seg.direct() && range.holds(bytes); }

// Right after a call of `bytes` in the collective's range
// returned on this rank, with or without the direct path: when the
// placement is watched and a recheck is due (ShmSegment::recheck_due_after),
// both local ranks measure it again (shm_placement.hpp, recheck_placement)
// and the next calls follow the verdict. Every local rank calls it after
// the same call, so they agree without a message; a call that threw
// never gets here, on any rank, and checks nothing. Inline: every small
// call passes here and leaves at the first test.
void recheck_placement(Transport& t, ShmSegment& seg);
inline void watch_placement(Transport& t, ShmSegment& seg, std::size_t bytes, Range range) {
  if (range.holds(bytes) && seg.placement_watched() && seg.recheck_due_after(t.info().sequence, bytes))
    recheck_placement(t, seg);
}

// What reduces elements over every local rank's contribution at once,
// where a reduction cannot go pair by pair (an order-independent sum needs
// each element's every contribution to agree its scale).
class GatheredReduction {
 public:
  // out[i] from operands[0..n)[i], i < count (operands in local rank order;
  // out may be one of them: each element is read before it is written).
  virtual void reduce(const std::byte* const* operands, int n, std::size_t count, std::byte* out) const = 0;

 protected:
  ~GatheredReduction() = default;
};

// The collectives by a GatheredReduction over `count` elements of
// `element` bytes. Each requires seg.peers_readable() (every local rank
// takes these paths or none); in place is allowed as the collective
// allows it.
//   all_reduce: every local rank owns util::owner_slice of the elements
//     and reduces it from every rank's input at once (its own in place,
//     the peers' read block by block, kPullBytes in all), then reads the
//     other owners' slices, as the owners' all_reduce does (round B).
//   reduce_scatter: local rank r reduces block r (`count` elements at
//     r * count of every input) into its out.
//   reduce: below kReduceGatheredOwnersBytes the root reduces every
//     element from every input into its out; from it, as the owners'
//     reduce: every local rank reduces its util::owner_slice (the root's
//     into its out, the others' into a scratch of their own), and the
//     root reads the others' slices.
void all_reduce_gathered(Transport& t, ShmSegment& seg, const void* in, void* out, std::size_t count,
                         std::size_t element, const GatheredReduction& reduction);
void reduce_scatter_gathered(Transport& t, ShmSegment& seg, const void* in, void* out, std::size_t count,
                             std::size_t element, const GatheredReduction& reduction);
void reduce_gathered(Transport& t, ShmSegment& seg, const void* in, void* out, std::size_t count,
                     std::size_t element, int root, const GatheredReduction& reduction);

// After it, every local rank's out holds op over every local rank's in
// (owner s reduced slice s; owners <= local size). in == out is allowed.
void all_reduce(Transport& t, ShmSegment& seg, const void* in, void* out, std::size_t count, DataType dtype,
                ReduceOp op, int owners);

// After it, `out` on local rank `root` holds op over every local rank's
// `in`; `out` is ignored (may be null) elsewhere. in == out is allowed.
void reduce(Transport& t, ShmSegment& seg, const void* in, void* out, std::size_t count, DataType dtype,
            ReduceOp op, int root);

// After it, every local rank's `data` holds what local rank `root`'s held.
void broadcast(Transport& t, ShmSegment& seg, void* data, std::size_t bytes, int root);

// The public all-gather: every local rank's `bytes` of `in` end in block
// local_rank of every local rank's `out`, each rank pulling every peer's
// input straight into its out; the call check in round A, before anything
// is read or written. `in` may be this rank's block of `out` (in place).
void all_gather_blocks(Transport& t, ShmSegment& seg, const void* in, void* out, std::size_t bytes);

// How many collectives took the direct path in this process (for tests:
// whether it really runs where it can).
std::uint64_t calls();

}  // namespace strata::host::shm::direct
