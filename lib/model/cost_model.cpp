// The model's machinery: each algorithm's formula (its descriptor's, stated
// in its own file: model/formula.hpp) composed into plans, flat and
// hierarchical, over the call's regime and the machine's cores.
#include "strata/cost_model.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "model/formula.hpp"
#include "strata/errors.hpp"
#include "strata/spec.hpp"

namespace strata::model {
namespace {

double on_cores(const Cost& c, double oversubscription) { return std::max(c.time, oversubscription * c.busy); }

bool modelled(std::string_view name) {
  const Formula* formula = formula_of(name);
  return formula && formula->cost;
}

bool guessed(std::string_view name) {
  const Formula* formula = formula_of(name);
  return formula && formula->guessed;
}

bool uses_shared_memory(std::string_view name) {
  for (const AlgorithmInfo& a : registered_algorithms())
    if (a.name == name) return a.shared_memory;
  return false;
}

// Hierarchical a/b (lib/exec/hierarchical.cpp): reduce-scatter in the
// node, b across nodes on each local rank's 1/r slice (all r at once, so
// they share the node's link), all-gather in the node. The three levels
// follow one another, each taking its turns on the cores by itself.
double hierarchical(CostFn intra_formula, bool intra_shared_memory, CostFn cross_formula,
                    const Machine& mc, double m, const Shape& s, int shards) {
  const int r = s.ranks_per_node;
  const double turns = std::max(1.0, s.oversubscription);
  const Group node{.n = r, .ranks_per_node = r, .nodes = 1, .machine = &mc, .senders_cap = 1};
  // Each cross-node group holds one rank per node; r such groups share each node's link.
  Machine shared = mc;
  if (!s.one_host) shared.inter.beta *= r;
  const Group cross{.n = s.nodes, .ranks_per_node = 1, .nodes = s.nodes, .machine = &shared, .senders_cap = 1};
  // Nodes of one rank: the driver runs b alone, on the whole message.
  if (r == 1) return on_cores(cross_formula(cross, m, shards), turns);
  const double share = (r - 1.0) / r;
  Cost scatter, gather;
  if (intra_shared_memory) {
    scatter = everyone_busy(mc.shm.alpha + share * m * (mc.shm.beta + mc.gamma));
    gather = everyone_busy(mc.shm.alpha + share * m * mc.shm.beta);
  } else {
    scatter = intra_formula(node, m, 1);  // all-reduce in the node, keep the slice
    gather = everyone_busy((r - 1) * mc.intra.alpha + share * m * mc.intra.beta);
  }
  return on_cores(scatter, turns) + on_cores(cross_formula(cross, m / r, shards), turns) + on_cores(gather, turns);
}

// The machine as a call of `bytes` per rank sees it: the regime's per-byte
// costs in beta and gamma, so the formulas need not know about regimes.
Machine in_regime(const Machine& m, double bytes) {
  if (bytes <= m.cache_bytes) return m;
  Machine r = m;
  for (Link* link : {&r.shm, &r.intra, &r.inter}) link->beta = link->beta_memory;
  r.gamma = m.gamma_memory;
  r.mpi_scale = m.mpi_scale_memory;
  return r;
}

}  // namespace

std::optional<double> predict_all_reduce(const Machine& calibrated, std::string_view plan, double bytes,
                                         const Shape& shape) {
  const Machine machine = in_regime(calibrated, bytes);
  std::string algorithm;
  int shards = 1;
  try {
    const AllReduceSpec spec{std::string(plan)};
    if (spec.is_auto()) return std::nullopt;
    algorithm = spec.tuples().front().algorithm;
    shards = spec.tuples().front().shards;
  } catch (const Error&) {
    return std::nullopt;
  }
  const auto slash = algorithm.find('/');
  const std::string intra = algorithm.substr(0, slash);
  const std::string cross = slash == std::string::npos ? "" : algorithm.substr(slash + 1);
  const Formula* a = formula_of(intra);
  if (!a || !a->cost) return std::nullopt;
  const double turns = std::max(1.0, shape.oversubscription);
  if (cross.empty() || shape.nodes == 1) {
    const int n = shape.ranks_per_node * shape.nodes;
    const Group all{.n = n, .ranks_per_node = shape.ranks_per_node, .nodes = shape.nodes, .machine = &machine,
                    .senders_cap = shape.one_host ? 1 : shape.ranks_per_node};
    return on_cores(a->cost(all, bytes, cross.empty() ? shards : 1), turns);
  }
  const Formula* b = formula_of(cross);
  if (!b || !b->cost) return std::nullopt;
  return hierarchical(a->cost, uses_shared_memory(intra), b->cost, machine, bytes, shape, shards);
}

Shape shape_of(const Topology& topology) {
  Shape shape;
  shape.nodes = static_cast<int>(topology.nodes.size());
  shape.ranks_per_node = static_cast<int>(topology.ranks.size());
  // machine -> (ranks, cores); a machine is its boot id where known, else its hostname
  std::map<std::string, std::pair<int, int>> machines;
  for (const NodeInfo& node : topology.nodes) {
    const int ranks = static_cast<int>(node.ranks.size());
    shape.ranks_per_node = std::min(shape.ranks_per_node, ranks);
    auto& machine = machines[node.machine.empty() ? node.hostname : node.machine];
    machine.first += ranks;
    machine.second = node.cores;  // virtual nodes of one machine report the same hardware
  }
  for (const auto& [name, machine] : machines)
    if (machine.second > 0)
      shape.oversubscription = std::max(shape.oversubscription, double(machine.first) / machine.second);
  shape.one_host = shape.nodes > 1 && machines.size() == 1;
  return shape;
}

std::string spec_from_model(const Machine& machine, const Shape& shape, const AllReduceSpec& incumbent,
                            double margin) {
  std::vector<std::string> flat, candidates;
  for (const AlgorithmInfo& a : registered_algorithms())
    if (a.memory == Memory::host && modelled(a.name) && !guessed(a.name)) flat.push_back(a.name);
  candidates = flat;
  if (shape.nodes > 1)
    for (const AlgorithmInfo& a : registered_algorithms())
      if (a.memory == Memory::host && a.shared_memory && modelled(a.name))
        for (const std::string& b : flat) candidates.push_back(a.name + "/" + b);
  constexpr int kLargestPower = 40;
  std::vector<SpecTuple> ranges;
  for (int power = 0; power <= kLargestPower; ++power) {
    const double bytes = std::ldexp(1.0, power);
    SpecTuple best;
    double best_seconds = 0;
    for (const std::string& plan : candidates) {
      const std::optional<double> t = predict_all_reduce(machine, plan, bytes, shape);
      if (t && (best.algorithm.empty() || *t < best_seconds)) best = {plan, 1, -1}, best_seconds = *t;
    }
    if (const SpecTuple* kept = incumbent.select(static_cast<std::size_t>(bytes))) {
      // The guessed formula cannot judge the plan it guesses at: that stays.
      const std::optional<double> t =
          predict_all_reduce(machine, AllReduceSpec({{kept->algorithm, kept->shards, -1}}).to_string(), bytes, shape);
      if (guessed(kept->algorithm) || (t && best_seconds * (1 + margin) >= *t))
        best = {kept->algorithm, kept->shards, -1};
    }
    if (ranges.empty() || ranges.back().algorithm != best.algorithm || ranges.back().shards != best.shards)
      ranges.push_back(best);
    ranges.back().limit = static_cast<long long>(bytes);
  }
  ranges.back().limit = -1;
  return AllReduceSpec(ranges).to_string();
}

std::vector<std::string> modelled_algorithms() {
  std::vector<std::string> names;
  for (const AlgorithmInfo& a : registered_algorithms())
    if (modelled(a.name)) names.push_back(a.name);
  return names;
}

}  // namespace strata::model
