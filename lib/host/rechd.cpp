// rechd: recursive halving-doubling all-reduce (Rabenseifner) for any rank
// count and any length.
//
// With p' = the largest power of two <= n and r = n - p', the first 2r ranks
// pair up: each even one sends its whole vector to its odd neighbour, which
// reduces, and then sits out (extra ranks fold in first and receive the
// result last). The p' remaining ranks, renumbered v = 0..p'-1 in rank order,
// reduce-scatter by recursive halving: at distance m = p'/2, p'/4, ..., 1 each
// splits its current range in two with sub_slice (the lower half stays with
// the partner whose bit m is clear), sends the other half and reduces the
// half it keeps. Vrank v then holds the finished slice at position v of the
// nested split. Recursive doubling replays the steps backwards to all-gather,
// and the folded ranks get the full result from their partner. Uneven halves
// need no padding: both partners compute the same split.
//
// Every element is reduced by exactly one rank and copied to the others, so
// all ranks get the same bits; each combine is reduce_into(dst, lower rank's
// partial, higher rank's partial), so the order is fixed by rank numbers and
// not by which side computes or when messages arrive.
//
// An all-reduce of at most kDoublingBytes per shard runs recursive doubling
// instead (after the same fold-in): at distance 1, 2, ..., p'/2 partners
// swap their whole partials and both reduce them, lower rank's first, so
// every rank of a group holds the same bits after each step. log2(p')
// rounds instead of the 2 log2(p') of halving + doubling: the latency-bound
// sizes this plan serves across nodes (at 2 ranks one exchange, not two).
//
// Shards M split the data into M contiguous slices (even_slice) that run one
// after another, each on its own tag (the slice index). reduce runs the same
// fold-in and reduce-scatter, then every vrank sends its slice straight to
// the root. broadcast is declined (tree serves it).
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <vector>

#include "host/algorithm.hpp"
#include "host/reduce_kernel.hpp"
#include "model/formula.hpp"
#include "util/copy.hpp"
#include "util/slice.hpp"

namespace strata::host {
namespace {

using util::Slice;

// Parts of at most this many bytes all-reduce by recursive doubling: it
// sends log2(p') whole vectors where halving + doubling sends 2 (1 - 1/p')
// of one in twice the rounds, so it wins while the rounds cost more than
// the extra bytes (Open MPI's tuned all-reduce switches near 10 kB too).
// The cost model's formula (rechd_cost, below) uses the same bound.
constexpr std::size_t kDoublingBytes = 8 * 1024;

// Scratch slots: the incoming half (or the folded partner's vector), and the
// working buffer of a reduce on ranks without an output.
constexpr std::size_t kIncomingSlot = 0;
constexpr std::size_t kWorkSlot = 1;

// The rank layout of one call: who folds in, and the vranks of the rest.
struct Layout {
  int size = 1;
  int pow2 = 1;   // p': ranks in the halving-doubling phase
  int extra = 0;  // r: ranks folded into their odd neighbour

  explicit Layout(int n) : size(n), pow2(static_cast<int>(std::bit_floor(static_cast<unsigned>(n)))), extra(n - pow2) {}

  // Even ranks below 2r sit out after sending their vector to rank + 1.
  bool folded(int rank) const { return rank < 2 * extra && rank % 2 == 0; }
  int vrank(int rank) const { return rank < 2 * extra ? rank / 2 : rank - extra; }
  int real(int vrank) const { return vrank < extra ? 2 * vrank + 1 : vrank + extra; }
};

// One halving step as seen by one vrank: the half it keeps and the half it
// hands to the partner.
struct Step {
  int partner = 0;  // real rank
  Slice keep, give;
};

// The halving steps of `vrank` over `range`, from distance p'/2 down to 1.
std::vector<Step> halving_steps(const Layout& layout, int vrank, Slice range) {
  std::vector<Step> steps;
  for (int m = layout.pow2 / 2; m >= 1; m /= 2) {
    const std::size_t upper = (vrank & m) ? 1 : 0;
    const Step step{layout.real(vrank ^ m), util::sub_slice(range, 2, upper), util::sub_slice(range, 2, 1 - upper)};
    steps.push_back(step);
    range = step.keep;
  }
  return steps;
}

// The finished slice vrank holds after the reduce-scatter.
Slice final_slice(const Layout& layout, int vrank, Slice range) {
  for (int m = layout.pow2 / 2; m >= 1; m /= 2) range = util::sub_slice(range, 2, (vrank & m) ? 1 : 0);
  return range;
}

// One slice of the data: `in` and `work` point at its first element, `count`
// is its length, `tag` keeps its messages apart from other slices'.
struct Part {
  const void* in;
  void* work;  // the result buffer: job.out, or scratch on a reduce's non-roots
  std::size_t count;
  int tag;
};

// The fold-in: a folded rank sends its vector to its odd neighbour and
// returns null (it sits out); that neighbour reduces it with its own into
// `work` and returns `work`; every other rank returns `in`. The result is
// this rank's partial of the whole part.
const void* fold_in(Transport& t, const Job& job, const Layout& layout, const Part& part, std::byte* incoming) {
  const std::size_t bytes = part.count * job.element_bytes();
  const int rank = t.rank();
  Requests requests;
  if (layout.folded(rank)) {
    t.isend(requests, part.in, bytes, rank + 1, part.tag);
    t.wait(requests);
    return nullptr;
  }
  if (rank >= 2 * layout.extra) return part.in;
  t.irecv(requests, incoming, bytes, rank - 1, part.tag);  // the odd partner is the higher rank
  t.wait(requests);
  reduce_into(part.work, incoming, part.in, part.count, job.dtype, job.op);
  return part.work;
}

// The fold-out: folded ranks receive the finished part from their neighbour.
void fold_out(Transport& t, const Job& job, const Layout& layout, const Part& part) {
  const std::size_t bytes = part.count * job.element_bytes();
  const int rank = t.rank();
  Requests requests;
  if (layout.folded(rank))
    t.irecv(requests, part.work, bytes, rank + 1, part.tag);
  else if (rank < 2 * layout.extra)
    t.isend(requests, part.work, bytes, rank - 1, part.tag);
  t.wait(requests);
}

// Fold-in and reduce-scatter. Afterwards a participating rank's `work` holds
// its finished slice (final_slice); the rest of `work` is scratch. Returns
// the steps taken (empty for folded ranks and for n = 1).
std::vector<Step> reduce_scatter(Transport& t, const Job& job, const Layout& layout, const Part& part) {
  const std::size_t eb = job.element_bytes();
  const int rank = t.rank();
  std::byte* incoming = t.scratch(kIncomingSlot, part.count * eb);
  // This rank's partial of the current range: `in` until the first reduction.
  const void* acc = fold_in(t, job, layout, part, incoming);
  if (!acc) return {};

  std::vector<Step> steps = halving_steps(layout, layout.vrank(rank), {0, part.count});
  for (const Step& step : steps) {
    Requests requests;
    if (step.keep.count) t.irecv(requests, incoming, step.keep.count * eb, step.partner, part.tag);
    if (step.give.count) t.isend(requests, util::element_at(acc, step.give.offset, eb), step.give.count * eb, step.partner, part.tag);
    t.wait(requests);
    if (step.keep.count) {
      const void* mine = util::element_at(acc, step.keep.offset, eb);
      const void* lower = step.partner < rank ? incoming : mine;
      const void* higher = step.partner < rank ? mine : incoming;
      reduce_into(util::element_at(part.work, step.keep.offset, eb), lower, higher, step.keep.count, job.dtype, job.op);
    }
    acc = part.work;
  }
  if (acc != part.work) util::copy_bytes(part.work, acc, part.count * eb);  // n = 1 out of place
  return steps;
}

void all_reduce_part(Transport& t, const Job& job, const Layout& layout, const Part& part) {
  const std::size_t eb = job.element_bytes();
  const std::vector<Step> steps = reduce_scatter(t, job, layout, part);

  // All-gather by recursive doubling: undo the halving steps in reverse.
  for (auto step = steps.rbegin(); step != steps.rend(); ++step) {
    Requests requests;
    if (step->give.count)
      t.irecv(requests, util::element_at(part.work, step->give.offset, eb), step->give.count * eb, step->partner, part.tag);
    if (step->keep.count)
      t.isend(requests, util::element_at(part.work, step->keep.offset, eb), step->keep.count * eb, step->partner, part.tag);
    t.wait(requests);
  }

  fold_out(t, job, layout, part);  // folded ranks receive the result last
}

// Recursive doubling over the whole part (see the top of the file).
void all_reduce_by_doubling(Transport& t, const Job& job, const Layout& layout, const Part& part) {
  const std::size_t bytes = part.count * job.element_bytes();
  const int rank = t.rank();
  std::byte* incoming = t.scratch(kIncomingSlot, bytes);
  // This rank's partial: `in` until the first reduction.
  if (const void* acc = fold_in(t, job, layout, part, incoming)) {
    const int vrank = layout.vrank(rank);
    for (int distance = 1; distance < layout.pow2; distance *= 2) {
      const int partner = layout.real(vrank ^ distance);
      Requests requests;
      t.irecv(requests, incoming, bytes, partner, part.tag);
      t.isend(requests, acc, bytes, partner, part.tag);
      t.wait(requests);
      const void* lower = partner < rank ? incoming : acc;
      const void* higher = partner < rank ? acc : incoming;
      reduce_into(part.work, lower, higher, part.count, job.dtype, job.op);
      acc = part.work;
    }
    if (acc != part.work) util::copy_bytes(part.work, acc, bytes);  // n = 1 out of place
  }
  fold_out(t, job, layout, part);
}

void reduce_part(Transport& t, const Job& job, const Layout& layout, const Part& part) {
  const std::size_t eb = job.element_bytes();
  const int rank = t.rank();
  reduce_scatter(t, job, layout, part);

  // Gather: every vrank sends its finished slice straight to the root.
  Requests requests;
  if (rank == job.root) {
    for (int v = 0; v < layout.pow2; ++v) {
      const int from = layout.real(v);
      const Slice slice = final_slice(layout, v, {0, part.count});
      if (from != rank && slice.count)
        t.irecv(requests, util::element_at(part.work, slice.offset, eb), slice.count * eb, from, part.tag);
    }
  } else if (!layout.folded(rank)) {
    const Slice slice = final_slice(layout, layout.vrank(rank), {0, part.count});
    if (slice.count) t.isend(requests, util::element_at(part.work, slice.offset, eb), slice.count * eb, job.root, part.tag);
  }
  t.wait(requests);
}

// Run `fn` on each of the job's shards in turn.
template <typename Fn>
void for_each_shard(const Job& job, void* work, Fn fn) {
  const std::size_t eb = job.element_bytes();
  const std::size_t shards = static_cast<std::size_t>(job.shards < 1 ? 1 : job.shards);
  for (std::size_t s = 0; s < shards; ++s) {
    const Slice slice = util::even_slice(job.count, shards, s);
    if (slice.count == 0) continue;
    fn(Part{util::element_at(job.in, slice.offset, eb), util::element_at(work, slice.offset, eb), slice.count, static_cast<int>(s)});
  }
}

void rechd_all_reduce(Transport& t, const Job& job) {
  const Layout layout(t.size());
  for_each_shard(job, job.out, [&](const Part& part) {
    if (part.count * job.element_bytes() <= kDoublingBytes)
      all_reduce_by_doubling(t, job, layout, part);
    else
      all_reduce_part(t, job, layout, part);
  });
}

void rechd_reduce(Transport& t, const Job& job) {
  const Layout layout(t.size());
  void* work = t.rank() == job.root ? job.out : t.scratch(kWorkSlot, job.count * job.element_bytes());
  for_each_shard(job, work, [&](const Part& part) { reduce_part(t, job, layout, part); });
}

// The cost model's formula (model/formula.hpp): ranks above the largest power
// of two p fold in (whole message to a partner and back), then log2(p) halving
// steps (distance p/2, p/4, ..., sending and reducing half of what is left) and
// the mirror doubling steps without reduction; up to kDoublingBytes per shard
// instead log2(p) steps (distance 1, 2, ..., p/2) that each swap and reduce the
// whole message. Shards: M slices one after another.
double rechd_cost_one(const model::Group& g, double m) {
  if (g.n <= 1) return 0;
  const int p = model::floor_pow2(g.n);
  double t = 0;
  if (p != g.n) {
    const model::Link fold = model::step_link(g, p, 1);
    t += 2 * (fold.alpha + m * fold.beta) + m * g.machine->gamma;
  }
  if (m <= kDoublingBytes) {
    for (int distance = 1; distance < p; distance *= 2) {
      const model::Link link = model::step_link(g, distance, g.ranks_per_node);
      t += link.alpha + m * link.beta + m * g.machine->gamma;
    }
    return t;
  }
  double part = m;
  for (int distance = p / 2; distance >= 1; distance /= 2) {
    part /= 2;
    const model::Link link = model::step_link(g, distance, g.ranks_per_node);
    t += 2 * (link.alpha + part * link.beta) + part * g.machine->gamma;  // halving + doubling
  }
  return t;
}

model::Cost rechd_cost(const model::Group& g, double m, int shards) {
  return model::everyone_busy(shards * rechd_cost_one(g, m / shards));
}

}  // namespace

extern const Algorithm rechd = {
    .info = {.name = "rechd",
             .description = "recursive halving-doubling (Rabenseifner), recursive doubling for small parts",
             .broadcast = false, .shards = true, .model = {.cost = rechd_cost}},
    .all_reduce = rechd_all_reduce, .reduce = rechd_reduce};

}  // namespace strata::host
