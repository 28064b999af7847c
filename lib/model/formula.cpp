#include "model/formula.hpp"

#include <algorithm>

namespace strata::model {
namespace {

// A step in which some pairs talk inside a node and others across nodes
// (a ring over several nodes of several ranks) lasts as long as its
// slowest pair.
Link slowest(const Link& a, const Link& b) {
  return {std::max(a.alpha, b.alpha), std::max(a.beta, b.beta), std::max(a.beta_memory, b.beta_memory)};
}

// The hop an average rank of a ring receives over: one of a node's r
// ranks takes the hop leaving the node, the others a hop inside it. What
// a ring step keeps a rank busy for; the step lasts as long as ring_link.
Link ring_hop_on_average(const Group& g) {
  const int r = g.ranks_per_node;
  if (g.nodes == 1 || r == 1) return ring_link(g);
  const Link leaving = step_link(g, r, 1), inside = g.machine->intra;
  const auto mean = [r](double out, double in) { return (out + (r - 1) * in) / r; };
  return {mean(leaving.alpha, inside.alpha), mean(leaving.beta, inside.beta),
          mean(leaving.beta_memory, inside.beta_memory)};
}

}  // namespace

Cost everyone_busy(double time) { return {time, time}; }

Link step_link(const Group& g, int distance, int senders) {
  if (g.nodes == 1 || distance < g.ranks_per_node) return g.machine->intra;
  const int sharing = std::clamp(senders, 1, g.senders_cap);
  return {g.machine->inter.alpha, g.machine->inter.beta * sharing};
}

Link ring_link(const Group& g) {
  if (g.nodes == 1) return g.machine->intra;
  const Link leaving = step_link(g, g.ranks_per_node, 1);
  return g.ranks_per_node > 1 ? slowest(g.machine->intra, leaving) : leaving;
}

Cost ring_steps(const Group& g, double m, double messages) {
  const double segment = m / g.n;
  const auto steps = [&](const Link& link) { return 2.0 * (g.n - 1) * (messages * link.alpha + segment * link.beta); };
  const double reduce = (g.n - 1) * segment * g.machine->gamma;
  return {steps(ring_link(g)) + reduce, steps(ring_hop_on_average(g)) + reduce};
}

int floor_pow2(int n) {
  int p = 1;
  while (p * 2 <= n) p *= 2;
  return p;
}

int ceil_log2(int n) {
  int steps = 0;
  while ((1 << steps) < n) ++steps;
  return steps;
}

}  // namespace strata::model
