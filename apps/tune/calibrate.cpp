#include "calibrate.hpp"

#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <vector>

#include "layout.hpp"
#include "options.hpp"
#include "strata/strata.hpp"
#include "sweep.hpp"
#include "timing.hpp"

namespace tune {
namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// Every rank meets here; ranks with nothing to do sleep instead of spinning
// in MPI_Barrier, leaving the cores to the ranks that measure.
void meet(MPI_Comm comm) {
  MPI_Request request;
  MPI_Ibarrier(comm, &request);
  for (int done = 0; !done;) {
    MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    if (!done) usleep(200);
  }
}

// Runs of `iters` calls that time_alone takes the median of: on a shared
// VM one run now and then comes out several times slower (pscpu at 1 MiB:
// 886 us in one of four calibrations, 176-192 us in the others), and a
// single run made that the model's parameter.
constexpr int kRuns = 3;

// Seconds per call of `plan` all-reducing `bytes` on the ranks `members`
// alone (a communicator of their own, in that order), slowest member: the
// median of kRuns runs, each the median of `iters` calls; every rank
// returns the figure.
double time_alone(MPI_Comm comm, const std::vector<int>& members, const std::string& plan, std::size_t bytes,
                  int iters) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  const auto me = std::find(members.begin(), members.end(), rank);
  MPI_Comm group;
  MPI_Comm_split(comm, me == members.end() ? MPI_UNDEFINED : 0, static_cast<int>(me - members.begin()), &group);
  double seconds = 0;
  meet(comm);
  if (group != MPI_COMM_NULL) {
    strata::Communicator alone(group, strata::Config{.all_reduce_spec = plan});
    Workload workload(bytes);
    std::vector<double> runs;
    for (int run = 0; run < kRuns; ++run)
      runs.push_back(bench::time_collective(group, 3, iters, [&] { workload.run(alone, bytes); }).median_us * 1e-6);
    seconds = median(runs);
  }
  meet(comm);
  if (group != MPI_COMM_NULL) MPI_Comm_free(&group);
  MPI_Bcast(&seconds, 1, MPI_DOUBLE, members.front(), comm);
  return seconds;
}

// Solves measured = predict() for the parameter at *field, which the
// prediction is linear in (every other parameter already set).
double solve(double* field, double measured, const std::function<double()>& predict) {
  *field = 0;
  const double at0 = predict();
  *field = 1e-9;
  const double slope = (predict() - at0) / 1e-9;
  return slope > 0 ? std::max(0.0, (measured - at0) / slope) : 0;
}

// The three sizes each level is measured at: latency, the caches' regime,
// the memory regime.
struct Sizes {
  std::size_t small = 8, cached = 0, large = 32u << 20;
};

// One level's link from `plans` (latency plan, bandwidth plan) run by
// `members` alone, solved through the model's formula for them on one node
// of members.size() ranks; `field` is the machine's link that formula
// reads (intra for MPI point-to-point, shm for pscpu).
model::Link fit_link(MPI_Comm comm, const std::vector<int>& members, const std::string& latency_plan,
                     const std::string& bandwidth_plan, model::Machine machine, model::Link model::Machine::*field,
                     const Sizes& sizes, const char* name, std::string& notes) {
  const double t_small = time_alone(comm, members, latency_plan, sizes.small, 500);
  const double t_cached = time_alone(comm, members, bandwidth_plan, sizes.cached, 40);
  const double t_large = time_alone(comm, members, bandwidth_plan, sizes.large, 10);
  model::Link& link = machine.*field;
  const model::Shape shape{static_cast<int>(members.size()), 1, 1};
  auto predict = [&](const std::string& plan, std::size_t bytes) {
    return [&machine, plan, bytes, shape] { return *model::predict_all_reduce(machine, plan, double(bytes), shape); };
  };
  link.alpha = solve(&link.alpha, t_small, predict(latency_plan, sizes.small));
  link.beta = solve(&link.beta, t_cached, predict(bandwidth_plan, sizes.cached));
  link.beta_memory = solve(&link.beta_memory, t_large, predict(bandwidth_plan, sizes.large));
  link.alpha = solve(&link.alpha, t_small, predict(latency_plan, sizes.small));  // once more, betas known
  notes += fmt::format("{}: ranks {} alone: {} {} {:.2f} us; {} {} {:.1f} us; {} {} {:.0f} us\n", name,
                       fmt::join(members, ","), latency_plan, human_bytes(double(sizes.small)), t_small * 1e6,
                       bandwidth_plan, human_bytes(double(sizes.cached)), t_cached * 1e6, bandwidth_plan,
                       human_bytes(double(sizes.large)), t_large * 1e6);
  return link;
}

// Seconds per byte for summing f32 arrays of `bytes` each on one core,
// rank 0 alone; every rank returns the figure.
double measure_gamma(MPI_Comm comm, std::size_t bytes, std::string& notes) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  double gamma = 0;
  meet(comm);
  if (rank == 0) {
    const std::size_t count = bytes / sizeof(float);
    std::vector<float> a(count, 1.0f), b(count, 2.0f);
    std::vector<double> seconds;
    const int rounds = std::max<int>(6, static_cast<int>((64u << 20) / bytes));  // ~64 MiB reduced in all
    for (int i = 0; i < rounds; ++i) {
      const double start = MPI_Wtime();
      for (std::size_t k = 0; k < count; ++k) a[k] += b[k];
      asm volatile("" : : "r"(a.data()) : "memory");
      if (i > 0) seconds.push_back(MPI_Wtime() - start);
    }
    gamma = median(seconds) / double(bytes);
    notes += fmt::format("gamma: rank 0 alone sums two {} f32 arrays: {:.1f} us, {:.3f} ns per byte\n",
                         human_bytes(double(bytes)), median(seconds) * 1e6, gamma * 1e9);
  }
  meet(comm);
  MPI_Bcast(&gamma, 1, MPI_DOUBLE, 0, comm);
  return gamma;
}

// The regimes' boundary, measured: `plan` on `members` alone at 2, 4, 8 and
// 16 MiB, each size classed with the regime whose prediction is nearer
// (ratio to the measurement); the boundary is the largest size classed as
// cached (at least `floor`, the L2: a shared last-level cache can hold more
// than the L2 says, as on this project's VM).
double fit_boundary(MPI_Comm comm, const std::vector<int>& members, const std::string& plan, const model::Machine& m,
                    double floor, std::string& notes) {
  double boundary = floor;
  std::string seen;
  for (std::size_t bytes = 2u << 20; bytes <= (16u << 20); bytes *= 2) {
    const double t = time_alone(comm, members, plan, bytes, 10);
    const model::Shape shape{static_cast<int>(members.size()), 1, 1};
    model::Machine cached = m, memory = m;
    cached.cache_bytes = double(bytes);
    memory.cache_bytes = 0;
    const double c = *model::predict_all_reduce(cached, plan, double(bytes), shape);
    const double d = *model::predict_all_reduce(memory, plan, double(bytes), shape);
    const bool is_cached = std::fabs(std::log(c / t)) <= std::fabs(std::log(d / t));
    if (is_cached) boundary = std::max(boundary, double(bytes));
    seen += fmt::format(" {} {:.0f} us ({})", human_bytes(double(bytes)), t * 1e6, is_cached ? "cached" : "memory");
  }
  notes += fmt::format("cache_bytes: {} on ranks {} alone:{} -> {}\n", plan, fmt::join(members, ","), seen,
                       human_bytes(boundary));
  return boundary;
}

// `plan` at `bytes` on `members` alone, divided by `formula`'s prediction
// for it (0 where that predicts nothing): how far the machine is from the
// formula where no parameter of its own is fitted.
double ratio_to_formula(MPI_Comm comm, const std::vector<int>& members, const std::string& plan, std::size_t bytes,
                        int iters, const model::Machine& formula, double& seconds) {
  seconds = time_alone(comm, members, plan, bytes, iters);
  const model::Shape shape{static_cast<int>(members.size()), 1, 1};
  const double predicted = *model::predict_all_reduce(formula, plan, double(bytes), shape);
  return predicted > 0 ? seconds / predicted : 0;
}

// The MPI library's own all-reduce (plan `mpi`) on `pair` alone against the
// model's guess at it (lib/host/mpi.cpp, mpi_cost), at the caches' size and the
// large one: Machine::mpi_scale and mpi_scale_memory. `m` holds every
// other parameter already; its intra link is the pair's.
void fit_mpi_scales(MPI_Comm comm, const std::vector<int>& pair, const Sizes& sizes, model::Machine& m,
                    std::string& notes) {
  model::Machine guess = m;
  guess.mpi_scale = guess.mpi_scale_memory = 1;
  double t_cached = 0, t_large = 0;
  if (const double scale = ratio_to_formula(comm, pair, "mpi", sizes.cached, 40, guess, t_cached); scale > 0)
    m.mpi_scale = scale;
  if (const double scale = ratio_to_formula(comm, pair, "mpi", sizes.large, 10, guess, t_large); scale > 0)
    m.mpi_scale_memory = scale;
  notes += fmt::format("mpi (the MPI library's all-reduce): ranks {} alone: {} {:.1f} us ({:.2f} x the guess); {} {:.0f} us "
                       "({:.2f} x)\n",
                       fmt::join(pair, ","), human_bytes(double(sizes.cached)), t_cached * 1e6, m.mpi_scale,
                       human_bytes(double(sizes.large)), t_large * 1e6, m.mpi_scale_memory);
}

// pscpu's replicated path (lib/host/pscpu.cpp, pscpu_cost: 64 KiB to 512 KiB on one node)
// on `members` alone at kDirectProbeBytes, against its formula with every
// other parameter as calibrated: Machine::shm_direct_scale.
constexpr std::size_t kDirectProbeBytes = 256 * 1024;

void fit_direct_scale(MPI_Comm comm, const std::vector<int>& members, model::Machine& m, std::string& notes) {
  model::Machine formula = m;
  formula.shm_direct_scale = 1;
  double t = 0;
  if (const double scale = ratio_to_formula(comm, members, "pscpu", kDirectProbeBytes, 40, formula, t); scale > 0)
    m.shm_direct_scale = scale;
  notes += fmt::format("shm_direct_scale: ranks {} alone: pscpu {} {:.1f} us ({:.2f} x the formula)\n",
                       fmt::join(members, ","), human_bytes(double(kDirectProbeBytes)), t * 1e6, m.shm_direct_scale);
}

// The regimes' first guess: the per-core L2 cache (a rank's buffers of a call
// up to that size stay in its caches), 1 MiB when the system does not say.
double cache_boundary() {
  const long l2 = sysconf(_SC_LEVEL2_CACHE_SIZE);
  return l2 > 0 ? double(l2) : double(1u << 20);
}

}  // namespace

Calibration calibrate(MPI_Comm comm) {
  strata::Communicator world(comm);
  const Layout layout = layout_of(world.topology());
  const auto& nodes = world.topology().nodes;
  Calibration c;
  model::Machine& m = c.machine;
  m.cache_bytes = cache_boundary();
  Sizes sizes;
  sizes.cached = static_cast<std::size_t>(m.cache_bytes / 2);
  const model::Shape& shape = layout.shape;
  c.notes = fmt::format("calibrated on {} ranks, {} nodes, {} ranks per node{}{}{}\n", layout.ranks, shape.nodes,
                        layout.ranks_per_node_text(), layout.virtual_nodes ? " (virtual nodes)" : "",
                        shape.one_host && !layout.virtual_nodes ? " (hosts on one machine)" : "",
                        shape.oversubscription > 1 ? fmt::format("; {:.3g} ranks per core", shape.oversubscription)
                                                   : std::string());
  m.gamma = measure_gamma(comm, sizes.cached / 2, c.notes);
  m.gamma_memory = measure_gamma(comm, sizes.large, c.notes);

  // MPI point-to-point: tree at 8 B gives alpha, xring the betas, on a pair
  // of ranks alone (inside a node: intra; across two nodes: inter).
  const auto pair_node = std::find_if(nodes.begin(), nodes.end(), [](const auto& n) { return n.ranks.size() >= 2; });
  if (pair_node != nodes.end())
    m.intra = fit_link(comm, {pair_node->ranks[0], pair_node->ranks[1]}, "tree", "xring", m, &model::Machine::intra,
                       sizes, "intra (MPI inside a node)", c.notes);
  if (nodes.size() >= 2)
    m.inter = fit_link(comm, {nodes[0].ranks[0], nodes[1].ranks[0]}, "tree", "xring", m, &model::Machine::intra, sizes,
                       "inter (MPI between nodes)", c.notes);
  // The boundary on the pair just measured (intra if there is one).
  const std::vector<int> pair = pair_node != nodes.end() ? std::vector<int>{pair_node->ranks[0], pair_node->ranks[1]}
                                                         : std::vector<int>{nodes[0].ranks[0], nodes[1].ranks[0]};
  model::Machine probe = m;
  if (pair_node == nodes.end()) probe.intra = m.inter;  // the formula reads intra for a pair on one "node"
  m.cache_bytes = fit_boundary(comm, pair, "xring", probe, m.cache_bytes, c.notes);
  if (pair_node == nodes.end()) {
    m.intra = m.inter;
    c.notes += "intra: not measured (no node has two ranks); copied from inter\n";
  }
  if (nodes.size() < 2) {
    m.inter = m.intra;
    c.notes += "inter: not measured (one node); copied from intra\n";
  }
  fit_mpi_scales(comm, pair, sizes, m, c.notes);
  // Shared memory: pscpu on the first node with two ranks, its ranks alone.
  if (pair_node != nodes.end()) {
    m.shm = fit_link(comm, pair_node->ranks, "pscpu", "pscpu", m, &model::Machine::shm, sizes,
                     "shm (pscpu inside a node)", c.notes);
    fit_direct_scale(comm, pair_node->ranks, m, c.notes);
  } else {
    m.shm = m.intra;
    c.notes += "shm: not measured (no node has two ranks); copied from intra\n";
  }
  return c;
}

}  // namespace tune
