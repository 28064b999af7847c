// pscpu: "parameter server on CPU". The data is cut into K slices
// (even_slice) and slice p is owned by rank p, which reduces it in host
// memory and hands the result out:
//   - shards <= 1: every rank owns one slice (K = n);
//   - shards = M >= 2: ranks 0..min(M, n)-1 own the slices (K = min(M, n));
//     the other ranks only contribute and receive.
//
// all_reduce: every rank posts all its sends at once (slice p to owner p).
// An owner posts a receive per contributor into scratch, then reduces in rank
// order 0..n-1, waiting for each contribution in turn: the summation order is
// fixed by rank numbers (never by arrival), and later transfers still overlap
// earlier reductions. Each owner then sends its finished slice to every rank,
// which receives it directly into job.out. Every element is reduced by one
// owner only, so all ranks get identical bits.
//
// reduce: the same, but owners send their slices to the root only.
// broadcast (van de Geijn): the root scatters slice p to owner p, then the
// owners all-gather (the root already has everything).
//
// On one node (Transport::shared_memory), all_reduce runs the same owners
// over the node's shared-memory segment instead (shm_rounds.hpp), and
// reduce and broadcast run shm_rooted.hpp's rounds (their shards are
// ignored there: the shape follows the node's size). From a size on, where
// the kernel lets ranks read each other's memory, all three read their
// peers' buffers directly instead (shm_direct.hpp: one copy, not two;
// reduce and broadcast only up to 512 KiB, where that wins).
//
// Contributions and results travel on different tags: between two ranks
// that both own slices, both kinds flow in the same direction, and
// receives are posted in a different order than the sends.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "host/algorithm.hpp"
#include "host/reduce_kernel.hpp"
#include "host/shm_direct.hpp"
#include "host/shm_rooted.hpp"
#include "host/shm_rounds.hpp"
#include "model/formula.hpp"
#include "util/copy.hpp"
#include "util/slice.hpp"

namespace strata::host {
namespace {

using util::Slice;

constexpr int kContributionTag = 0;  // rank -> owner: its slice of the input (broadcast: the root's scatter)
constexpr int kResultTag = 1;        // owner -> rank: the finished slice

// Scratch slots: the contributions an owner receives, and a reduce's result
// on a non-root owner (shm_direct.hpp uses slots 2 and 3).
constexpr std::size_t kContributionSlot = 0;
constexpr std::size_t kResultSlot = 1;

int owner_count(const Job& job, int size) { return job.shards <= 1 ? size : std::min(job.shards, size); }

// Post this rank's contributions: slice p of `job.in` to each owner p other
// than itself, starting after itself so that owners are not all hit in the
// same order.
void send_contributions(Transport& t, const Job& job, int owners, Requests& sends) {
  const std::size_t eb = job.element_bytes();
  for (int k = 1; k <= owners; ++k) {
    const int p = (t.rank() + k) % owners;
    const Slice slice = util::even_slice(job.count, owners, p);
    if (p != t.rank() && slice.count)
      t.isend(sends, util::element_at(job.in, slice.offset, eb), slice.count * eb, p, kContributionTag);
  }
}

// The owner's side: receive every other rank's contribution to `slice`,
// reduce them all in rank order into `result` (which may alias job.in's
// slice when in place). Receives must be posted (by post_receives) before
// this rank's own sends go out; reduce_owned finishes the job.
class OwnedSlice {
 public:
  OwnedSlice(Transport& t, const Job& job, Slice slice)
      : t_(t), job_(job), slice_(slice), bytes_(slice.count * job.element_bytes()), pending_(t.size()) {}

  void post_receives() {
    if (!bytes_) return;
    buffer_ = t_.scratch(kContributionSlot, static_cast<std::size_t>(t_.size()) * bytes_);
    for (int j = 0; j < t_.size(); ++j)
      if (j != t_.rank()) t_.irecv(pending_[j], contribution(j), bytes_, j, kContributionTag);
  }

  void reduce_into_result(void* result) {
    if (!bytes_) return;
    const std::size_t eb = job_.element_bytes();
    const void* own = util::element_at(job_.in, slice_.offset, eb);
    // In place, `result` is our own input: keep a copy unless ours is the
    // first operand (then the running result overwrites it only after use).
    if (own == result && t_.rank() != 0) {
      util::copy_bytes(contribution(t_.rank()), own, bytes_);
      own = contribution(t_.rank());
    }
    auto operand = [&](int j) -> const void* {
      if (j == t_.rank()) return own;
      t_.wait(pending_[j]);
      return contribution(j);
    };
    const void* acc = operand(0);
    for (int j = 1; j < t_.size(); ++j) {
      reduce_into(result, acc, operand(j), slice_.count, job_.dtype, job_.op);
      acc = result;
    }
    if (acc != result) util::copy_bytes(result, acc, bytes_);  // a single rank, out of place
  }

 private:
  std::byte* contribution(int j) { return buffer_ + static_cast<std::size_t>(j) * bytes_; }

  Transport& t_;
  const Job& job_;
  Slice slice_;
  std::size_t bytes_;
  std::byte* buffer_ = nullptr;
  std::vector<Requests> pending_;  // per contributing rank
};

// Post receives of every owner's finished slice (other than `skip`'s) into `out`.
void receive_results(Transport& t, const Job& job, int owners, int skip, void* out, Requests& into) {
  const std::size_t eb = job.element_bytes();
  for (int p = 0; p < owners; ++p) {
    const Slice slice = util::even_slice(job.count, owners, p);
    if (p != skip && slice.count) t.irecv(into, util::element_at(out, slice.offset, eb), slice.count * eb, p, kResultTag);
  }
}

void pscpu_all_reduce(Transport& t, const Job& job) {
  const int n = t.size(), rank = t.rank(), owners = owner_count(job, n);
  // One node: the same owners, over shared memory instead of messages.
  if (ShmSegment* segment = t.shared_memory()) {
    if (shm::direct::takes(*segment, job.bytes(), segment->direct_sizes().all_reduce))
      shm::direct::all_reduce(t, *segment, job.in, job.out, job.count, job.dtype, job.op, owners);
    else
      shm::all_reduce(t, *segment, job.in, job.out, job.count, job.dtype, job.op, owners);
    shm::direct::watch_placement(t, *segment, job.bytes(), segment->direct_sizes().all_reduce);
    return;
  }
  const bool owner = rank < owners, in_place = job.in == job.out;
  const Slice mine = owner ? util::even_slice(job.count, owners, rank) : Slice{};
  const std::size_t eb = job.element_bytes();

  // Out of place, results can land in job.out from the start; in place, only
  // once our sends no longer read those bytes.
  Requests results_in, contributions_out, results_out;
  if (!in_place) receive_results(t, job, owners, rank, job.out, results_in);
  OwnedSlice owned(t, job, mine);
  owned.post_receives();
  send_contributions(t, job, owners, contributions_out);

  if (owner && mine.count) {
    void* result = util::element_at(job.out, mine.offset, eb);
    owned.reduce_into_result(result);
    for (int k = 1; k < n; ++k) t.isend(results_out, result, mine.count * eb, (rank + k) % n, kResultTag);
  }
  t.wait(contributions_out);
  if (in_place) receive_results(t, job, owners, rank, job.out, results_in);
  t.wait(results_in);
  t.wait(results_out);
}

void pscpu_reduce(Transport& t, const Job& job) {
  if (ShmSegment* segment = t.shared_memory()) {
    if (shm::direct::takes(*segment, job.bytes(), segment->direct_sizes().reduce))
      shm::direct::reduce(t, *segment, job.in, job.out, job.count, job.dtype, job.op, job.root);
    else
      shm::reduce(t, *segment, job.in, job.out, job.count, job.dtype, job.op, job.root);
    shm::direct::watch_placement(t, *segment, job.bytes(), segment->direct_sizes().reduce);
    return;
  }
  const int n = t.size(), rank = t.rank(), owners = owner_count(job, n);
  const bool owner = rank < owners, root = rank == job.root, in_place = job.in == job.out;
  const Slice mine = owner ? util::even_slice(job.count, owners, rank) : Slice{};
  const std::size_t eb = job.element_bytes();

  Requests results_in, contributions_out, result_out;
  if (root && !in_place) receive_results(t, job, owners, rank, job.out, results_in);
  OwnedSlice owned(t, job, mine);
  owned.post_receives();
  send_contributions(t, job, owners, contributions_out);

  if (owner && mine.count) {
    void* result = root ? static_cast<void*>(util::element_at(job.out, mine.offset, eb)) : t.scratch(kResultSlot, mine.count * eb);
    owned.reduce_into_result(result);
    if (!root) t.isend(result_out, result, mine.count * eb, job.root, kResultTag);
  }
  t.wait(contributions_out);
  if (root && in_place) receive_results(t, job, owners, rank, job.out, results_in);
  t.wait(results_in);
  t.wait(result_out);
}

void pscpu_broadcast(Transport& t, const Job& job) {
  if (ShmSegment* segment = t.shared_memory()) {
    if (shm::direct::takes(*segment, job.bytes(), segment->direct_sizes().broadcast))
      shm::direct::broadcast(t, *segment, job.out, job.bytes(), job.root);
    else
      shm::broadcast(t, *segment, job.out, job.bytes(), job.root);
    shm::direct::watch_placement(t, *segment, job.bytes(), segment->direct_sizes().broadcast);
    return;
  }
  const int n = t.size(), rank = t.rank(), owners = owner_count(job, n);
  const std::size_t eb = job.element_bytes();
  void* buffer = job.out;

  Requests requests;
  if (rank == job.root) {
    // Scatter each slice to its owner; a slice the root owns itself goes to everyone.
    for (int p = 0; p < owners; ++p) {
      const Slice slice = util::even_slice(job.count, owners, p);
      if (p != rank && slice.count)
        t.isend(requests, util::element_at(buffer, slice.offset, eb), slice.count * eb, p, kContributionTag);
    }
    const Slice mine = rank < owners ? util::even_slice(job.count, owners, rank) : Slice{};
    if (mine.count)
      for (int k = 1; k < n; ++k)
        t.isend(requests, util::element_at(buffer, mine.offset, eb), mine.count * eb, (rank + k) % n, kResultTag);
    t.wait(requests);
    return;
  }

  // Every other owner's slice arrives on the result tag (from the root for
  // a slice the root owns); ours comes from the root, and we pass it on.
  receive_results(t, job, owners, rank, buffer, requests);
  if (rank < owners) {
    const Slice mine = util::even_slice(job.count, owners, rank);
    if (mine.count) {
      Requests scatter;
      t.irecv(scatter, util::element_at(buffer, mine.offset, eb), mine.count * eb, job.root, kContributionTag);
      t.wait(scatter);
      for (int k = 1; k < n; ++k) {
        const int to = (rank + k) % n;
        if (to != job.root) t.isend(requests, util::element_at(buffer, mine.offset, eb), mine.count * eb, to, kResultTag);
      }
    }
  }
  t.wait(requests);
}

// The cost model's formula (model/formula.hpp) over the node's shared memory
// (lib/host/shm_*.cpp, docs/ALGORITHMS.md "Shared memory inside a node"): up to
// 16 KiB one round (stage the input, one synchronisation, every rank reduces
// every input); up to 64 KiB rounds through the segment (reduce-scatter and
// all-gather, three synchronisations per 256 KiB block); from 64 KiB
// single-copy reads of the peers' buffers, replicated (each rank reduces the
// whole message) below 512 KiB, owners (reduce-scatter then read the others'
// slices) from there. The replicated path's time is scaled by
// Machine::shm_direct_scale, which the calibration measures: shm's beta is
// fitted at cache_bytes/2, on the owners path, and a 2-rank replicated call
// moved 128 KiB at about 0.10 ns per byte where the owners moved 1 MiB at 0.17
// (docs/SCALING.md). The reads start at 32 KiB where they are cheap
// (host/shm_direct_sizes.hpp), which the model does not know: it keeps 64 KiB,
// and its error table starts there (docs/SCALING.md). That is the shape where
// the ranks sit far apart; near each other (host/shm_placement.hpp) the rounds
// run at every size, a shape this formula does not follow (docs/SCALING.md,
// "What the model ignores").
constexpr double kOneRoundBytes = 16 * 1024, kDirectBytes = 64 * 1024, kOwnersBytes = 512 * 1024;
constexpr double kBlockBytes = 256 * 1024;

double pscpu_shared_memory(const model::Machine& mc, int n, double m) {
  if (n <= 1) return 0;
  const model::Link& shm = mc.shm;
  const double others = n - 1;
  const double slice_share = others / n;
  if (m <= kOneRoundBytes) return shm.alpha + m * shm.beta + others * m * mc.gamma;
  if (m < kDirectBytes) {
    const double rounds = std::max(1.0, std::ceil(m / n / kBlockBytes));
    return 3 * rounds * shm.alpha + m * shm.beta + slice_share * m * (shm.beta + mc.gamma);
  }
  if (m < kOwnersBytes) return mc.shm_direct_scale * (shm.alpha + others * m * (shm.beta + mc.gamma));
  return 2 * shm.alpha + slice_share * m * (shm.beta + mc.gamma) + slice_share * m * shm.beta;
}

// The formula over point-to-point (across nodes): every rank sends slice j to
// owner j, owners reduce, then send the finished slices to everyone. Of a
// rank's n-1 peers, r-1 share its node (intra) and n-r do not (the link
// leaving the node, shared by the node's r ranks, which all send at once);
// the rank's own core receives both, one after the other.
model::Cost pscpu_cost(const model::Group& g, double m, int /*shards*/) {
  if (g.nodes == 1) return model::everyone_busy(pscpu_shared_memory(*g.machine, g.n, m));
  const int r = g.ranks_per_node;
  const model::Link crossing = model::step_link(g, r, r), inside = g.machine->intra;
  const double slice = m / g.n;
  const double phase =
      (g.n - r) * (crossing.alpha + slice * crossing.beta) + (r - 1) * (inside.alpha + slice * inside.beta);
  return model::everyone_busy(2 * phase + (g.n - 1) * slice * g.machine->gamma);
}

}  // namespace

extern const Algorithm pscpu = {
    .info = {.name = "pscpu",
             .description = "slice owners reduce in rank order; inside a node over the shared-memory segment",
             .shared_memory = true, .shards = true, .model = {.cost = pscpu_cost}},
    .all_reduce = pscpu_all_reduce, .reduce = pscpu_reduce, .broadcast = pscpu_broadcast};

}  // namespace strata::host
