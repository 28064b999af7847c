// Reduce and broadcast inside one node over a ShmSegment, in the rounds of
// shm_rounds.hpp (same counters, same double-buffered sets, the same call
// check riding in the first round when the Transport holds one).
//
// broadcast: the root copies the message into its set, a set per round;
// every other rank copies it out. Without a call check the root never
// waits for the others except to reuse a set two rounds later.
//
// reduce, two shapes, one per node size:
//   - gathered (two local ranks, or a small message): every other rank
//     copies its input into its set, the root reduces straight into its
//     output, own input first, then the others in rank order. The root
//     touches each byte once per rank plus its output: the least traffic
//     for two ranks.
//   - owners (three or more ranks, message above kSmallBytes): the
//     all-reduce's reduce-scatter (every local rank owns a slice); an owner
//     that is not the root reduces its block into its own set, where the
//     root copies it from; the root reduces its own slice straight into its
//     output. The arithmetic is spread over every rank, and the root moves
//     (5n - 3) / n bytes per byte of message instead of n + 1.
// Every result element is reduced in one fixed order, so the root's bits
// are the same run to run.
#pragma once

#include <cstddef>

#include "host/shm_segment.hpp"
#include "host/transport.hpp"
#include "strata/types.hpp"

namespace strata::host::shm {

// After it, `out` on the local rank `root` holds op over every local rank's
// `in`; `out` is ignored (may be null) elsewhere. in == out is allowed.
void reduce(Transport& t, ShmSegment& seg, const void* in, void* out, std::size_t count, DataType dtype,
            ReduceOp op, int root);

// After it, every local rank's `data` holds what the local rank `root`'s
// held.
void broadcast(Transport& t, ShmSegment& seg, void* data, std::size_t bytes, int root);

}  // namespace strata::host::shm
