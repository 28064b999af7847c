#include "calibrate.hpp"

#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
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

// One-way time (seconds) of `bytes` between ranks a and b: half the median
// round trip; every rank returns rank a's figure.
double one_way(MPI_Comm comm, int a, int b, std::size_t bytes, int iters) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  std::vector<char> buffer(std::max<std::size_t>(bytes, 1));
  std::vector<double> trips;
  const int count = static_cast<int>(bytes);
  meet(comm);
  if (rank == a || rank == b)
    for (int i = 0; i < iters + 2; ++i) {  // two warm-up trips
      const double start = MPI_Wtime();
      if (rank == a) {
        MPI_Send(buffer.data(), count, MPI_CHAR, b, 0, comm);
        MPI_Recv(buffer.data(), count, MPI_CHAR, b, 0, comm, MPI_STATUS_IGNORE);
      } else {
        MPI_Recv(buffer.data(), count, MPI_CHAR, a, 0, comm, MPI_STATUS_IGNORE);
        MPI_Send(buffer.data(), count, MPI_CHAR, a, 0, comm);
      }
      if (i >= 2) trips.push_back(MPI_Wtime() - start);
    }
  double t = rank == a ? median(trips) / 2 : 0;
  meet(comm);
  MPI_Bcast(&t, 1, MPI_DOUBLE, a, comm);
  return t;
}

// alpha and beta of the link between ranks a and b, with notes.
Link ping_pong(MPI_Comm comm, int a, int b, const char* name, std::string& notes) {
  Link link;
  link.alpha = one_way(comm, a, b, 8, 200);
  std::vector<double> betas;
  std::string times;
  for (std::size_t bytes : {1u << 20, 4u << 20, 16u << 20}) {
    const double t = one_way(comm, a, b, bytes, 10);
    betas.push_back(std::max(0.0, (t - link.alpha) / double(bytes)));
    times += fmt::format(", {} {:.1f} us", human_bytes(double(bytes)), t * 1e6);
  }
  link.beta = median(betas);
  notes += fmt::format("{}: MPI ping-pong ranks {} <-> {}, one way: 8 B {:.2f} us{}\n", name, a, b, link.alpha * 1e6, times);
  return link;
}

// Seconds per byte for summing f32 on one core, rank 0 alone.
double measure_gamma(MPI_Comm comm, std::string& notes) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  double gamma = 0;
  meet(comm);
  if (rank == 0) {
    constexpr std::size_t kCount = (8u << 20) / sizeof(float);
    std::vector<float> a(kCount, 1.0f), b(kCount, 2.0f);
    std::vector<double> seconds;
    for (int i = 0; i < 6; ++i) {
      const double start = MPI_Wtime();
      for (std::size_t k = 0; k < kCount; ++k) a[k] += b[k];
      asm volatile("" : : "r"(a.data()) : "memory");
      if (i > 0) seconds.push_back(MPI_Wtime() - start);
    }
    gamma = median(seconds) / double(kCount * sizeof(float));
    notes += fmt::format("gamma: rank 0 sums two 8 MiB f32 arrays: {:.0f} us, {:.3f} ns per byte\n",
                         median(seconds) * 1e6, gamma * 1e9);
  }
  meet(comm);
  MPI_Bcast(&gamma, 1, MPI_DOUBLE, 0, comm);
  return gamma;
}

// Solves t = predict(x) for one parameter x the prediction is linear in.
// Solves measured = predict() for the parameter at *field, which the
// prediction is linear in (every other parameter already set).
double solve(double* field, double measured, const std::function<double()>& predict) {
  *field = 0;
  const double at0 = predict();
  *field = 1e-9;
  const double slope = (predict() - at0) / 1e-9;
  return slope > 0 ? std::max(0.0, (measured - at0) / slope) : 0;
}

}  // namespace

Calibration calibrate(MPI_Comm comm) {
  strata::Communicator world(comm);
  const Layout layout = layout_of(world.topology());
  const auto& nodes = world.topology().nodes;
  Calibration c;
  c.notes = fmt::format("calibrated on {} ranks, {} nodes, {} ranks per node{}\n", layout.ranks, layout.nodes,
                        layout.ranks_per_node_text(), layout.virtual_nodes ? " (virtual nodes)" : "");
  c.machine.gamma = measure_gamma(comm, c.notes);

  const auto pair_node = std::find_if(nodes.begin(), nodes.end(), [](const auto& n) { return n.ranks.size() >= 2; });
  if (pair_node != nodes.end()) {
    c.machine.intra = ping_pong(comm, pair_node->ranks[0], pair_node->ranks[1], "intra", c.notes);
  } else {
    c.notes += "intra: not measured (no node has two ranks); copied from inter\n";
  }
  if (nodes.size() >= 2) {
    c.machine.inter = ping_pong(comm, nodes[0].ranks[0], nodes[1].ranks[0], "inter", c.notes);
  } else {
    c.machine.inter = c.machine.intra;
    c.notes += "inter: not measured (one node); copied from intra\n";
  }
  if (pair_node == nodes.end()) c.machine.intra = c.machine.inter;

  // shm: pscpu on the first node with two ranks, that node's ranks alone.
  if (pair_node != nodes.end()) {
    const int node_index = static_cast<int>(pair_node - nodes.begin());
    const int mine = world.topology().ranks[static_cast<std::size_t>(world.rank())].node;
    MPI_Comm node_comm;
    MPI_Comm_split(comm, mine == node_index ? 0 : MPI_UNDEFINED, world.rank(), &node_comm);
    double times[2] = {0, 0};
    const std::size_t sizes[2] = {8, 8u << 20};
    meet(comm);
    if (node_comm != MPI_COMM_NULL) {
      strata::Communicator shm(node_comm, strata::Config{.all_reduce_spec = "pscpu"});
      Workload workload(sizes[1]);
      for (int k = 0; k < 2; ++k)
        times[k] = bench::time_collective(node_comm, 3, k == 0 ? 200 : 10,
                                          [&] { workload.run(shm, sizes[k]); }).median_us * 1e-6;
    }
    meet(comm);
    if (node_comm != MPI_COMM_NULL) MPI_Comm_free(&node_comm);
    MPI_Bcast(times, 2, MPI_DOUBLE, pair_node->ranks[0], comm);
    const Shape node_shape{static_cast<int>(pair_node->ranks.size()), 1, 1};
    Machine& m = c.machine;
    auto predict_at = [&](std::size_t bytes) { return [&m, bytes, node_shape] {
      return *predict_all_reduce(m, "pscpu", double(bytes), node_shape); }; };
    m.shm.alpha = solve(&m.shm.alpha, times[0], predict_at(sizes[0]));
    m.shm.beta = solve(&m.shm.beta, times[1], predict_at(sizes[1]));
    // alpha was solved with beta = 0 at 8 B; once more with beta known.
    m.shm.alpha = solve(&m.shm.alpha, times[0], predict_at(sizes[0]));
    c.notes += fmt::format("shm: pscpu all-reduce on node {} ({} ranks) alone: 8 B {:.2f} us, 8 MiB {:.0f} us\n",
                           node_index, pair_node->ranks.size(), times[0] * 1e6, times[1] * 1e6);
  } else {
    c.machine.shm = c.machine.intra;
    c.notes += "shm: not measured (no node has two ranks); copied from intra\n";
  }
  return c;
}

}  // namespace tune
