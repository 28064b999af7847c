// The formulas (docs/SCALING.md writes them out). Times add: on a CPU the
// same core copies what it receives and reduces it, so moving and reducing
// do not overlap. Thresholds quoted from the implementation are named
// constants with the file that decides them.
#include "strata/cost_model.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>

#include "strata/errors.hpp"
#include "strata/spec.hpp"

namespace strata::model {
namespace {

// A flat algorithm's group: n ranks, `ranks_per_node` consecutive ones per
// node. `senders_cap`: how many ranks of a node may share the node's
// inter-node link in one step (all of them in a flat plan; the cross level
// of a hierarchical plan already counts them in its bytes).
struct Group {
  int n = 1;
  int ranks_per_node = 1;
  int nodes = 1;
  const Machine* machine = nullptr;
  int senders_cap = 1;  // 1 where the nodes are virtual nodes of one host (Shape::one_host)
};

// The link a step between ranks `distance` apart uses, when `senders` ranks
// of each node send at once: inside the node while the partner is in it
// (consecutive placement, power-of-two distances), else the inter-node link
// with its bandwidth shared by the senders.
Link step_link(const Group& g, int distance, int senders) {
  if (g.nodes == 1 || distance < g.ranks_per_node) return g.machine->intra;
  const int sharing = std::clamp(senders, 1, g.senders_cap);
  return {g.machine->inter.alpha, g.machine->inter.beta * sharing};
}

// A step in which some pairs talk inside a node and others across nodes
// (a ring over several nodes of several ranks) lasts as long as its
// slowest pair.
Link slowest(const Link& a, const Link& b) {
  return {std::max(a.alpha, b.alpha), std::max(a.beta, b.beta), std::max(a.beta_memory, b.beta_memory)};
}

// The link a ring step uses: inside the node on one node; on several, the
// slower of a hop inside a node (when nodes have several ranks) and the one
// hop leaving each node (one sender per node at a time).
Link ring_link(const Group& g) {
  if (g.nodes == 1) return g.machine->intra;
  const Link leaving = step_link(g, g.ranks_per_node, 1);
  return g.ranks_per_node > 1 ? slowest(g.machine->intra, leaving) : leaving;
}

// The hop an average rank of that ring receives over: one of a node's r
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

// A phase's cost: `time`, its slowest rank's (the critical path), and
// `busy`, the time an average rank of the phase spends at work in it
// (moving and reducing bytes; a rank that waits for a peer yields its
// core: util::Backoff, lib/util/deadline.hpp). Where ranks outnumber cores
// they take turns at the work, so a phase lasts at least the machine's
// whole busy time over its cores: on_cores(). In a ring, halving-doubling
// or pscpu every rank works the whole time (busy = time) and the whole time
// scales; in a binomial tree most ranks wait in most rounds.
struct Cost {
  double time = 0;
  double busy = 0;
};

Cost everyone_busy(double time) { return {time, time}; }

double on_cores(const Cost& c, double oversubscription) { return std::max(c.time, oversubscription * c.busy); }

// A ring's 2(n-1) steps of `messages` messages of m/n bytes each, and
// the reduction of n-1 segments.
Cost ring_steps(const Group& g, double m, double messages) {
  const double segment = m / g.n;
  const auto steps = [&](const Link& link) { return 2.0 * (g.n - 1) * (messages * link.alpha + segment * link.beta); };
  const double reduce = (g.n - 1) * segment * g.machine->gamma;
  return {steps(ring_link(g)) + reduce, steps(ring_hop_on_average(g)) + reduce};
}

// xring (lib/host/xring.cpp): reduce-scatter then all-gather around the
// ring, 2(n-1) steps of m/n bytes, each step's segment sent in chunks of
// Config::chunk_bytes. With M shards, M rings over m/M each run at once:
// the same bytes per link, M times the messages.
constexpr double kRingChunkBytes = 256 * 1024;

Cost ring(const Group& g, double m, int shards) {
  if (g.n <= 1) return {};
  const double messages = shards * std::max(1.0, std::ceil(m / g.n / shards / kRingChunkBytes));
  return ring_steps(g, m, messages);
}

// rechd (lib/host/rechd.cpp): ranks above the largest power of two p fold
// in (whole message to a partner and back), then log2(p) halving steps
// (distance p/2, p/4, ..., sending and reducing half of what is left) and
// the mirror doubling steps without reduction; up to kRechdDoublingBytes
// per shard instead log2(p) steps (distance 1, 2, ..., p/2) that each swap
// and reduce the whole message. Shards: M slices one after another.
constexpr double kRechdDoublingBytes = 8 * 1024;  // rechd.cpp's kDoublingBytes

double rechd_one(const Group& g, double m) {
  if (g.n <= 1) return 0;
  const int p = floor_pow2(g.n);
  double t = 0;
  if (p != g.n) {
    const Link fold = step_link(g, p, 1);
    t += 2 * (fold.alpha + m * fold.beta) + m * g.machine->gamma;
  }
  if (m <= kRechdDoublingBytes) {
    for (int distance = 1; distance < p; distance *= 2) {
      const Link link = step_link(g, distance, g.ranks_per_node);
      t += link.alpha + m * link.beta + m * g.machine->gamma;
    }
    return t;
  }
  double part = m;
  for (int distance = p / 2; distance >= 1; distance /= 2) {
    part /= 2;
    const Link link = step_link(g, distance, g.ranks_per_node);
    t += 2 * (link.alpha + part * link.beta) + part * g.machine->gamma;  // halving + doubling
  }
  return t;
}

Cost rechd(const Group& g, double m, int shards) { return everyone_busy(shards * rechd_one(g, m / shards)); }

// tree (lib/host/tree.cpp): binomial reduce to rank 0, then binomial
// broadcast, ceil(log2 n) rounds each of the whole message. In a round at
// distance >= ranks per node only one rank per node crosses. The round at
// distance d has as many receivers as ranks r < n with r mod 2d = d (the
// senders, whose part in a single-copy transfer is to wait): they are the
// round's busy ranks, once reducing and once in the broadcast.
int round_receivers(int n, int distance) {
  int receivers = 0;
  for (int r = distance; r < n; r += 2 * distance) ++receivers;
  return receivers;
}

Cost tree(const Group& g, double m, int /*shards*/) {
  Cost c;
  for (int k = 0; k < ceil_log2(g.n); ++k) {
    const Link link = step_link(g, 1 << k, 1);
    const double round = 2 * (link.alpha + m * link.beta) + m * g.machine->gamma;  // reduce + broadcast
    c.time += round;
    c.busy += round * round_receivers(g.n, 1 << k) / g.n;
  }
  return c;
}

// mpi: whatever the MPI library picks; guessed as the better of recursive
// doubling (log2 p exchanges of the whole message) and a ring without
// chunking, the two Open MPI's tuned module uses for small and large sizes,
// times the factor the calibration measured between MPI_Allreduce and that
// guess on a pair of ranks (Machine::mpi_scale): how much slower the
// library's own implementation runs than the algorithm it is guessed to be.
constexpr std::string_view kGuessedAlgorithm = "mpi";

Cost mpi(const Group& g, double m, int /*shards*/) {
  if (g.n <= 1) return {};
  const int p = floor_pow2(g.n);
  double doubling = p != g.n ? 2 * (step_link(g, p, 1).alpha + m * step_link(g, p, 1).beta) + m * g.machine->gamma : 0;
  for (int distance = 1; distance < p; distance *= 2) {
    const Link link = step_link(g, distance, g.ranks_per_node);
    doubling += link.alpha + m * link.beta + m * g.machine->gamma;
  }
  const Cost ring = ring_steps(g, m, 1);
  const Cost guess = ring.time < doubling ? ring : everyone_busy(doubling);
  return {g.machine->mpi_scale * guess.time, g.machine->mpi_scale * guess.busy};
}

// pscpu over the node's shared memory (lib/host/shm_*.cpp, docs/ALGORITHMS.md
// "Shared memory inside a node"): up to 16 KiB one round (stage the input,
// one synchronisation, every rank reduces every input); up to 64 KiB rounds
// through the segment (reduce-scatter and all-gather, three
// synchronisations per 256 KiB block); from 64 KiB single-copy reads of the
// peers' buffers, replicated (each rank reduces the whole message) below
// 512 KiB, owners (reduce-scatter then read the others' slices) from there.
// The replicated path's time is scaled by Machine::shm_direct_scale, which
// the calibration measures: shm's beta is fitted at cache_bytes/2, on the
// owners path, and a 2-rank replicated call moved 128 KiB at about 0.10 ns
// per byte where the owners moved 1 MiB at 0.17 (docs/SCALING.md).
// The reads start at 32 KiB where they are cheap (host/shm_direct_sizes.hpp),
// which the model does not know: it keeps 64 KiB, and its error table
// starts there (docs/SCALING.md). That is the shape where the ranks sit far apart; near each other
// (host/shm_placement.hpp) the rounds run at every size, a shape this
// formula does not follow (docs/SCALING.md, "What the model ignores").
constexpr double kOneRoundBytes = 16 * 1024, kDirectBytes = 64 * 1024, kOwnersBytes = 512 * 1024;
constexpr double kBlockBytes = 256 * 1024;

double pscpu_shared_memory(const Machine& mc, int n, double m) {
  if (n <= 1) return 0;
  const Link& shm = mc.shm;
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

// pscpu over point-to-point (across nodes): every rank sends slice j to
// owner j, owners reduce, then send the finished slices to everyone. Of a
// rank's n-1 peers, r-1 share its node (intra) and n-r do not (the link
// leaving the node, shared by the node's r ranks, which all send at once);
// the rank's own core receives both, one after the other.
Cost pscpu(const Group& g, double m, int /*shards*/) {
  if (g.nodes == 1) return everyone_busy(pscpu_shared_memory(*g.machine, g.n, m));
  const int r = g.ranks_per_node;
  const Link crossing = step_link(g, r, r), inside = g.machine->intra;
  const double slice = m / g.n;
  const double phase =
      (g.n - r) * (crossing.alpha + slice * crossing.beta) + (r - 1) * (inside.alpha + slice * inside.beta);
  return everyone_busy(2 * phase + (g.n - 1) * slice * g.machine->gamma);
}

using Formula = std::function<Cost(const Group&, double, int)>;

// Registered name -> formula: the model's own table (a name the registry
// has and this table lacks gets no prediction).
const std::map<std::string, Formula, std::less<>>& formulas() {
  static const std::map<std::string, Formula, std::less<>> table = {
      {"xring", ring}, {"rechd", rechd}, {"tree", tree}, {"mpi", mpi}, {"pscpu", pscpu}};
  return table;
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
double hierarchical(const Formula& intra_formula, bool intra_shared_memory, const Formula& cross_formula,
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
  const auto& table = formulas();
  const auto a = table.find(intra);
  if (a == table.end()) return std::nullopt;
  const double turns = std::max(1.0, shape.oversubscription);
  if (cross.empty() || shape.nodes == 1) {
    const int n = shape.ranks_per_node * shape.nodes;
    const Group all{.n = n, .ranks_per_node = shape.ranks_per_node, .nodes = shape.nodes, .machine = &machine,
                    .senders_cap = shape.one_host ? 1 : shape.ranks_per_node};
    return on_cores(a->second(all, bytes, cross.empty() ? shards : 1), turns);
  }
  const auto b = table.find(cross);
  if (b == table.end()) return std::nullopt;
  return hierarchical(a->second, uses_shared_memory(intra), b->second, machine, bytes, shape, shards);
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
    if (a.memory == Memory::host && formulas().count(a.name) && a.name != kGuessedAlgorithm) flat.push_back(a.name);
  candidates = flat;
  if (shape.nodes > 1)
    for (const AlgorithmInfo& a : registered_algorithms())
      if (a.memory == Memory::host && a.shared_memory && formulas().count(a.name))
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
      if (kept->algorithm == kGuessedAlgorithm || (t && best_seconds * (1 + margin) >= *t))
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
    if (formulas().count(a.name)) names.push_back(a.name);
  return names;
}

}  // namespace strata::model
