// Collectives inside one node over a ShmSegment, in rounds.
//
// A round moves one block per slice. Every local rank runs every round:
//   1. wait until no peer still reads my set for this round (their
//      `consumed` >= round - 2: two sets, so round r+1 can be staged while
//      peers still read round r);
//   2. write my data for the round into my set, then publish `staged` = round;
//   3. wait for the peers whose data I need (`staged` >= round), read it
//      straight from their sets (reduce or copy), publish `consumed` = round.
// Blocks are cache-sized so a block written in step 2 is usually still in
// cache when a peer reads it. Waiting backs off and honours the call's
// deadline: a rank that never arrives makes the others raise
// DeadlineExceeded naming it (by rank in the node communicator).
//
// Slices: `owners` local ranks 0..owners-1 own the owners' slices (util::owner_slice) of the message
// (owners < local size happens with unequal nodes or pscpu#M).
// Every result element is reduced by exactly one rank, in a fixed order, so
// all ranks get identical bits, run to run.
#pragma once

#include <cstddef>

#include "host/shm_segment.hpp"
#include "host/transport.hpp"
#include "strata/types.hpp"

namespace strata::host::shm {

// Block per slice per round; the segment's sets hold local_size blocks.
// STRATA_SHM_BLOCK_BYTES overrides it (for tuning; see docs/PERFORMANCE.md).
constexpr std::size_t kBlockBytes = 256 * 1024;
std::size_t block_bytes();
// Messages up to this size take the one-round path (every rank reduces the
// whole message), trading redundant arithmetic for a single sync.
constexpr std::size_t kSmallBytes = 16 * 1024;

// Set size a segment needs for `local_size` ranks: local_size blocks.
std::size_t set_bytes_for(int local_size);

// After it, owner i's out[slice i] = op over every local rank's in[slice i]
// (owner's own input first, then the others in rank order). Other parts of
// `out` are untouched. in == out is allowed.
void reduce_scatter(Transport& t, ShmSegment& seg, const void* in, void* out, std::size_t count, DataType dtype,
                    ReduceOp op, int owners);

// The same rounds with every local rank an owner, for a reduce: the root's
// out ends with the whole reduction (each slice reduced by its owner as
// above, the others' slices copied from their sets); `out` is ignored (may
// be null) on the other ranks. in == out is allowed.
void reduce_scatter_to_root(Transport& t, ShmSegment& seg, const void* in, void* out, std::size_t count,
                            DataType dtype, ReduceOp op, int root);

// Copies every owner's out[slice i] into every local rank's out.
void all_gather(Transport& t, ShmSegment& seg, void* out, std::size_t count, DataType dtype, int owners);

// The public all-gather: every local rank's `count` elements of `in` end
// in block local_rank (of local_size) of every rank's `out`, in rounds of
// up to a block per rank. The first round carries the call check when the
// Transport holds one, and `out` is written only after every rank's was
// seen alike: a refused call writes nothing. `in` may be this rank's block
// of `out` (in place).
void all_gather_blocks(Transport& t, ShmSegment& seg, const void* in, void* out, std::size_t count, DataType dtype);

// The whole message in one round: every rank stages its input and reduces
// all inputs in rank order. Precondition: count * dtype size <= set_bytes.
void small_all_reduce(Transport& t, ShmSegment& seg, const void* in, void* out, std::size_t count, DataType dtype,
                      ReduceOp op);

// One round that only checks that every local rank makes the same call
// (`check` against every rank's): throws Mismatch on every rank if not.
// The algorithms below carry the same check in their first round instead
// when the Transport holds one (Transport::set_check).
void verify(Transport& t, ShmSegment& seg, const plan::Fingerprint& check);

// reduce_scatter + all_gather, or small_all_reduce for small messages.
void all_reduce(Transport& t, ShmSegment& seg, const void* in, void* out, std::size_t count, DataType dtype,
                ReduceOp op, int owners);

}  // namespace strata::host::shm
