// The alpha-beta-gamma cost model of strata's all-reduce plans
// (docs/SCALING.md): per link, a cost per message (alpha, seconds) and per
// byte moved (beta, seconds per byte); per byte reduced on one core a cost
// gamma. One formula per algorithm, looked up by the algorithm's registered
// name (model.cpp's table), composed for hierarchical plans "a/b" as strata
// runs them: reduce-scatter inside the node, b across nodes on the 1/local
// slice, all-gather inside the node. Pure arithmetic: no MPI, no clock.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tune {

struct Link {
  double alpha = 0;        // seconds per message (or per synchronisation, for shared memory)
  double beta = 0;         // seconds per byte moved, messages up to Machine::cache_bytes
  double beta_memory = 0;  // seconds per byte moved, larger messages (buffers beyond the caches)
};

// The parameters of one machine (or cluster), as --calibrate measures them.
// Per-byte costs come in two regimes: a call whose message (bytes per rank)
// is at most `cache_bytes` works in the caches, a larger one streams from
// memory, and on a CPU that moves and reduces every byte itself that
// differs by a factor of 2-4 (docs/SCALING.md has the measurements).
struct Machine {
  Link shm;    // strata's shared-memory segment inside a node (pscpu): alpha = one synchronisation
  Link intra;  // MPI point-to-point between two ranks of one node
  Link inter;  // MPI point-to-point between two nodes, one pair alone on the link
  double gamma = 0;         // seconds per byte reduced (f32 sum) on one core, in the caches
  double gamma_memory = 0;  // the same beyond the caches
  double cache_bytes = 0;   // the regimes' boundary (0: always the memory regime)
};

// Where the ranks are: `nodes` nodes of `ranks_per_node` consecutive ranks.
// `oversubscription`: ranks per core on the busiest host (>= 1); ranks that
// take turns on a core take turns on every cost, so all of them scale by it.
struct Shape {
  int ranks_per_node = 1;
  int nodes = 1;
  double oversubscription = 1;
};

// Predicted seconds of one all-reduce of `bytes` bytes per rank with `plan`
// (a spec's algorithm text: "xring", "rechd#2", "pscpu/xring#2") on
// `shape`. nullopt when the plan names an algorithm the model has no
// formula for (the GPU algorithms) or is not a valid plan. Never throws.
std::optional<double> predict_all_reduce(const Machine& machine, std::string_view plan, double bytes,
                                         const Shape& shape);

// The registered names the model has a formula for, in registry order.
std::vector<std::string> modelled_algorithms();

}  // namespace tune
