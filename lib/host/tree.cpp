// tree: binomial-tree reduce and broadcast, for latency-bound small
// messages (log2(n) rounds, each moving the whole message). all_reduce is
// reduce to rank 0 followed by broadcast from rank 0, so every rank ends with
// rank 0's bits. Ranks are renumbered relative to the root
// (vrank = (rank - root) mod n); the reduction order at every node is
// fixed (own partial, then children by increasing distance), so results are
// deterministic.
#include <cstring>

#include "host/algorithm.hpp"
#include "host/reduce_kernel.hpp"
#include "model/formula.hpp"
#include "util/copy.hpp"

namespace strata::host {
namespace {

int real_rank(int vrank, int root, int size) { return (vrank + root) % size; }

// Reduce `job.in` of all ranks into `result` on `root`. On other ranks
// `result` is a scratch buffer of the message size.
void binomial_reduce(Transport& t, const Job& job, void* result, int root) {
  const int size = t.size(), vrank = (t.rank() - root + size) % size;
  const std::size_t bytes = job.count * job.element_bytes();
  std::byte* incoming = t.scratch(1, bytes);
  const void* acc = job.in;  // the running partial, moved into `result` by the first reduction
  for (int mask = 1; mask < size; mask <<= 1) {
    if (vrank & mask) {
      Requests send;
      t.isend(send, acc, bytes, real_rank(vrank - mask, root, size));
      t.wait(send);
      return;
    }
    const int child = vrank + mask;
    if (child >= size) continue;
    Requests recv;
    t.irecv(recv, incoming, bytes, real_rank(child, root, size));
    t.wait(recv);
    reduce_into(result, acc, incoming, job.count, job.dtype, job.op);
    acc = result;
  }
  if (acc != result) util::copy_bytes(result, acc, bytes);  // size 1, or a leaf that is the root
}

// Broadcast `buffer` from `root`: receive from the parent (clear the lowest
// set bit of vrank), then send to children at decreasing distances.
void binomial_broadcast(Transport& t, void* buffer, std::size_t bytes, int root) {
  const int size = t.size(), vrank = (t.rank() - root + size) % size;
  int mask = 1;
  for (; mask < size; mask <<= 1) {
    if (vrank & mask) {
      Requests recv;
      t.irecv(recv, buffer, bytes, real_rank(vrank - mask, root, size));
      t.wait(recv);
      break;
    }
  }
  Requests sends;
  for (mask >>= 1; mask > 0; mask >>= 1)
    if (vrank + mask < size) t.isend(sends, buffer, bytes, real_rank(vrank + mask, root, size));
  t.wait(sends);
}

void tree_reduce(Transport& t, const Job& job) {
  void* result = t.rank() == job.root ? job.out : t.scratch(0, job.count * job.element_bytes());
  binomial_reduce(t, job, result, job.root);
}

void tree_all_reduce(Transport& t, const Job& job) {
  binomial_reduce(t, job, job.out, 0);
  binomial_broadcast(t, job.out, job.count * job.element_bytes(), 0);
}

void tree_broadcast(Transport& t, const Job& job) {
  binomial_broadcast(t, job.out, job.count * job.element_bytes(), job.root);
}

// The cost model's formula (model/formula.hpp): binomial reduce to rank 0, then
// binomial broadcast, ceil(log2 n) rounds each of the whole message. In a round
// at distance >= ranks per node only one rank per node crosses. The round at
// distance d has as many receivers as ranks r < n with r mod 2d = d (the
// senders, whose part in a single-copy transfer is to wait): they are the
// round's busy ranks, once reducing and once in the broadcast.
int round_receivers(int n, int distance) {
  int receivers = 0;
  for (int r = distance; r < n; r += 2 * distance) ++receivers;
  return receivers;
}

model::Cost tree_cost(const model::Group& g, double m, int /*shards*/) {
  model::Cost c;
  for (int k = 0; k < model::ceil_log2(g.n); ++k) {
    const model::Link link = model::step_link(g, 1 << k, 1);
    const double round = 2 * (link.alpha + m * link.beta) + m * g.machine->gamma;  // reduce + broadcast
    c.time += round;
    c.busy += round * round_receivers(g.n, 1 << k) / g.n;
  }
  return c;
}

}  // namespace

extern const Algorithm tree = {
    .info = {.name = "tree",
             .description = "binomial reduce to rank 0, then binomial broadcast: for latency-bound small messages",
             .model = {.cost = tree_cost}},
    .all_reduce = tree_all_reduce, .reduce = tree_reduce, .broadcast = tree_broadcast};

}  // namespace strata::host
