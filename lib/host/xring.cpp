// xring: ring reduce-scatter + all-gather over non-blocking point-to-point,
// pipelined in chunks (see ring_stream.hpp).
//
// Design: the buffer is split into `shards` contiguous parts, one ring per
// part; even rings send to rank+1, odd rings to rank-1, so with two or more
// shards both directions of every link carry data. Each ring splits its
// part into n segments. In reduce-scatter step s (0 <= s < n-1) a rank
// receives segment (v-s-1) and reduces it with its own input; after n-1
// steps it holds the final value of segment v+1, which the all-gather steps
// pass around the ring. v is the rank's position along its ring's
// direction. Every element is reduced on exactly one rank, in ring order, so
// all ranks get identical, deterministic bits.
//
// reduce: reduce-scatter as above, then every rank sends the segments it
// owns to the root. broadcast: the root's data flows down a pipelined chain
// (root -> root+1 -> ...), so the cost is about one message time plus
// (n-1) chunk times instead of log2(n) message times.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <vector>

#include "host/algorithm.hpp"
#include "host/ring_stream.hpp"
#include "model/formula.hpp"
#include "util/copy.hpp"
#include "util/slice.hpp"

namespace strata::host {
namespace {

using util::Slice;

// Scratch slots: a reduce's accumulator on non-roots in slot 0, ring m's
// receive window in slot 1 + m (so no shard count can collide with it).
constexpr std::size_t kAccumulatorSlot = 0;
std::size_t window_slot(int ring) { return 1 + static_cast<std::size_t>(ring); }

// One ring's geometry.
struct Ring {
  int tag;            // = ring index
  int position;       // v: this rank's position along the ring direction
  int successor, predecessor;
  Slice part;         // the elements this ring carries
  bool owners = false;  // segments are the Level contract's owner slices (plan/level.hpp), not even ones

  Slice segment(int n, int index) const {
    const auto i = static_cast<std::size_t>(((index % n) + n) % n);
    if (!owners) return util::sub_slice(part, n, i);
    const Slice s = util::owner_slice(part.count, static_cast<std::size_t>(n), i);
    return {part.offset + s.offset, s.count};
  }
};

std::vector<Ring> make_rings(const Transport& t, const Job& job, int root = 0) {
  const int n = t.size(), rank = t.rank();
  const std::size_t shards = std::max<std::size_t>(1, std::min<std::size_t>(job.shards, job.count));
  std::vector<Ring> rings;
  for (std::size_t m = 0; m < shards; ++m) {
    const bool forward = m % 2 == 0;
    const int relative = (rank - root + n) % n;
    const int position = forward ? relative : (n - relative) % n;
    const int successor = forward ? (rank + 1) % n : (rank - 1 + n) % n;
    const int predecessor = forward ? (rank - 1 + n) % n : (rank + 1) % n;
    rings.push_back({static_cast<int>(m), position, successor, predecessor, util::even_slice(job.count, shards, m)});
  }
  return rings;
}

std::size_t chunk_elems(const Job& job) { return std::max<std::size_t>(1, job.chunk_bytes / job.element_bytes()); }

// Runs all streams to completion, round-robin, backing off when none moves.
void drive(Transport& t, std::vector<std::unique_ptr<RingStream>>& streams) {
  for (auto& s : streams) s->start();
  util::Backoff backoff;
  std::vector<int> waiting;
  for (;;) {
    bool progressed = false, all_received = true;
    for (auto& s : streams) {
      progressed |= s->advance();
      all_received &= s->received_all();
    }
    if (all_received) break;
    // Busy progress still honours the deadline (many small chunks can keep
    // this loop busy long past it); the list of peers waited for is built
    // only when the loop idles or the deadline has passed.
    if (progressed && !t.expired()) {
      backoff.reset();
      continue;
    }
    waiting.clear();
    for (auto& s : streams)
      if (!s->received_all()) waiting.push_back(s->waiting_on());
    t.idle(backoff, waiting);  // throws DeadlineExceeded naming them once expired
  }
  for (auto& s : streams) s->finish();
}

std::unique_ptr<RingStream> make_stream(Transport& t, const Job& job, const Ring& ring, const void* own, void* acc) {
  const std::size_t ce = chunk_elems(job);
  std::byte* scratch = t.scratch(window_slot(ring.tag), RingStream::kWindow * ce * job.element_bytes());
  return std::make_unique<RingStream>(t, job, own, acc, ring.successor, ring.predecessor, ring.tag, scratch, ce);
}

// Reduce-scatter items: step s receives segment v-s-1 and reduces it.
// `forward_last`: whether the final step's result goes on to the successor
// (it starts the all-gather).
void add_reduce_scatter(RingStream& stream, const Ring& ring, int n, std::size_t ce, bool forward_last) {
  RingStream::for_each_chunk(ring.segment(n, ring.position), ce,
                             [&](Slice c) { stream.add_initial_send(c); });
  for (int s = 0; s < n - 1; ++s) {
    const bool forward = s < n - 2 || forward_last;
    RingStream::for_each_chunk(ring.segment(n, ring.position - s - 1), ce,
                               [&](Slice c) { stream.add_item({c, /*reduce=*/true, forward}); });
  }
}

void xring_all_reduce(Transport& t, const Job& job) {
  const int n = t.size();
  if (n == 1) {
    if (job.out != job.in) util::copy_bytes(job.out, job.in, job.count * job.element_bytes());
    return;
  }
  const std::size_t ce = chunk_elems(job);
  std::vector<std::unique_ptr<RingStream>> streams;
  for (const Ring& ring : make_rings(t, job)) {
    auto stream = make_stream(t, job, ring, job.in, job.out);
    add_reduce_scatter(*stream, ring, n, ce, /*forward_last=*/true);
    // All-gather step s receives segment v-s (final) into job.out and
    // forwards it unless it is the last step.
    for (int s = 0; s < n - 1; ++s)
      RingStream::for_each_chunk(ring.segment(n, ring.position - s), ce,
                                 [&](Slice c) { stream->add_item({c, false, s < n - 2}); });
    streams.push_back(std::move(stream));
  }
  drive(t, streams);
}

void xring_reduce(Transport& t, const Job& job) {
  const int n = t.size(), rank = t.rank();
  const bool root = rank == job.root;
  const std::size_t bytes = job.count * job.element_bytes();
  // Non-roots have no output buffer: accumulate in scratch.
  void* acc = root ? job.out : t.scratch(kAccumulatorSlot, bytes);
  if (n == 1) {
    if (acc != job.in) util::copy_bytes(acc, job.in, bytes);
    return;
  }
  const std::size_t ce = chunk_elems(job);
  const auto rings = make_rings(t, job, job.root);
  std::vector<std::unique_ptr<RingStream>> streams;
  for (const Ring& ring : rings) {
    auto stream = make_stream(t, job, ring, job.in, acc);
    add_reduce_scatter(*stream, ring, n, ce, /*forward_last=*/false);
    streams.push_back(std::move(stream));
  }
  drive(t, streams);
  // Gather: the owner of segment k is the rank at position k-1 on that ring.
  // Tags continue after the ring tags so the two phases never cross.
  const int gather_tag = static_cast<int>(rings.size());
  const std::size_t element = job.element_bytes();
  Requests requests;
  for (const Ring& ring : rings) {
    const bool forward = ring.tag % 2 == 0;
    if (!root) {
      const Slice mine = ring.segment(n, ring.position + 1);
      if (mine.count) t.isend(requests, static_cast<std::byte*>(acc) + mine.offset * element, mine.count * element,
                              job.root, gather_tag);
      continue;
    }
    for (int position = 1; position < n; ++position) {
      const Slice theirs = ring.segment(n, position + 1);
      const int owner = forward ? (job.root + position) % n : (job.root - position + n) % n;
      if (theirs.count)
        t.irecv(requests, static_cast<std::byte*>(job.out) + theirs.offset * element, theirs.count * element, owner,
                gather_tag);
    }
  }
  t.wait(requests);
}

// The ring of the level operations (one ring, forward): with root 1 the rank
// at position v ends its reduce-scatter holding segment v + 1, its own rank,
// so segments can be the owner slices.
Ring owner_ring(const Transport& t, const Job& job) {
  Ring ring = make_rings(t, Job{.count = job.count, .shards = 1}, /*root=*/1 % t.size()).front();
  ring.owners = true;
  return ring;
}

// Level reduce-scatter: rank s ends with owner slice s of the reduction in
// job.out (the ring's first half, every element reduced once in ring order).
void xring_reduce_scatter(Transport& t, const Job& job) {
  const int n = t.size();
  if (n == 1) {
    if (job.out != job.in) util::copy_bytes(job.out, job.in, job.bytes());
    return;
  }
  const Ring ring = owner_ring(t, job);
  std::vector<std::unique_ptr<RingStream>> streams;
  streams.push_back(make_stream(t, job, ring, job.in, job.out));
  add_reduce_scatter(*streams.back(), ring, n, chunk_elems(job), /*forward_last=*/false);
  drive(t, streams);
}

// Level all-gather: every rank ends with every owner's slice of job.out
// (in place), passed around the ring.
void xring_all_gather(Transport& t, const Job& job) {
  const int n = t.size();
  if (n == 1) return;
  const std::size_t ce = chunk_elems(job);
  const Ring ring = owner_ring(t, job);
  auto stream = make_stream(t, job, ring, job.out, job.out);
  RingStream::for_each_chunk(ring.segment(n, ring.position + 1), ce, [&](Slice c) { stream->add_initial_send(c); });
  for (int s = 0; s < n - 1; ++s)
    RingStream::for_each_chunk(ring.segment(n, ring.position - s), ce,
                               [&](Slice c) { stream->add_item({c, false, s < n - 2}); });
  std::vector<std::unique_ptr<RingStream>> streams;
  streams.push_back(std::move(stream));
  drive(t, streams);
}

void xring_broadcast(Transport& t, const Job& job) {
  const int n = t.size();
  if (n == 1) return;
  const std::size_t ce = chunk_elems(job);
  std::vector<std::unique_ptr<RingStream>> streams;
  for (const Ring& ring : make_rings(t, job, job.root)) {
    auto stream = make_stream(t, job, ring, job.out, job.out);
    if (ring.position == 0) {
      RingStream::for_each_chunk(ring.part, ce, [&](Slice c) { stream->add_initial_send(c); });
    } else {
      const bool forward = ring.position < n - 1;  // the chain ends just before the root
      RingStream::for_each_chunk(ring.part, ce, [&](Slice c) { stream->add_item({c, false, forward}); });
    }
    streams.push_back(std::move(stream));
  }
  drive(t, streams);
}

// The cost model's formula (model/formula.hpp): reduce-scatter then all-gather
// around the ring, 2(n-1) steps of m/n bytes, each step's segment sent in
// chunks of Config::chunk_bytes. With M shards, M rings over m/M each run at
// once: the same bytes per link, M times the messages.
constexpr double kRingChunkBytes = 256 * 1024;

model::Cost xring_cost(const model::Group& g, double m, int shards) {
  if (g.n <= 1) return {};
  const double messages = shards * std::max(1.0, std::ceil(m / g.n / shards / kRingChunkBytes));
  return model::ring_steps(g, m, messages);
}

}  // namespace

extern const Algorithm xring = {
    .info = {.name = "xring",
             .description = "ring reduce-scatter + all-gather, pipelined in chunks; #M: M rings, both directions",
             .shards = true, .model = {.cost = xring_cost}},
    .all_reduce = xring_all_reduce, .reduce = xring_reduce, .broadcast = xring_broadcast,
    .reduce_scatter = xring_reduce_scatter, .all_gather = xring_all_gather};

}  // namespace strata::host
