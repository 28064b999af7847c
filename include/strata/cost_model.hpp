// The alpha-beta-gamma cost model of strata's all-reduce plans
// (docs/SCALING.md): per link, a cost per message (alpha, seconds) and per
// byte moved (beta, seconds per byte); per byte reduced on one core a cost
// gamma. One formula per algorithm, in its registry descriptor (its own
// file, lib/host/<name>.cpp), composed for hierarchical plans
// "a/b" as strata runs them: reduce-scatter inside the node, b across nodes
// on the 1/local slice, all-gather inside the node. Pure arithmetic: no
// MPI, no clock. strata-tune calibrates, checks and projects it; a
// communicator whose all_reduce_spec is "auto" takes its host all-reduce
// plans from it when STRATA_MODEL_FILE names a .model file.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "strata/errors.hpp"
#include "strata/spec.hpp"
#include "strata/topology.hpp"

namespace strata::model {

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
  // The MPI library's own all-reduce (plan `mpi`) against the model's guess
  // at it, as the calibration timed them on a pair of ranks: the guess's
  // time is multiplied by mpi_scale in the caches' regime and by
  // mpi_scale_memory beyond (1: the guess as it stands).
  double mpi_scale = 1;
  double mpi_scale_memory = 1;
  // pscpu on one node between 64 KiB and 512 KiB, where each rank reads
  // its peers' whole inputs directly and reduces them all (the replicated
  // path), against its formula with the shm link's beta, which the
  // calibration fits on the owners path: the formula's time is multiplied
  // by it (1: the formula as it stands).
  double shm_direct_scale = 1;
};

// Where the ranks are: `nodes` nodes of `ranks_per_node` consecutive ranks.
// `oversubscription`: ranks per core on the busiest machine (>= 1); ranks
// that share a core take turns at their work, so each phase of a plan lasts
// at least the time its average rank works in it times this factor (a rank
// that waits for a peer yields its core).
struct Shape {
  int ranks_per_node = 1;
  int nodes = 1;
  double oversubscription = 1;
  // Every node is a virtual node of one host (STRATA_RANKS_PER_NODE, or
  // hosts emulated in network namespaces): bytes between nodes move through
  // the same cores and memory as inside a node, over no network interface
  // that a node's senders share.
  bool one_host = false;
};

// Predicted seconds of one all-reduce of `bytes` bytes per rank with `plan`
// (a spec's algorithm text: "xring", "rechd#2", "pscpu/xring#2") on
// `shape`. nullopt when the plan names an algorithm the model has no
// formula for (the GPU algorithms) or is not a valid plan. Never throws.
std::optional<double> predict_all_reduce(const Machine& machine, std::string_view plan, double bytes,
                                         const Shape& shape);

// The registered names the model has a formula for, in registry order.
std::vector<std::string> modelled_algorithms();

// The shape of a communicator's layout: the fewest ranks on a node, the
// node count and the ranks per core on the busiest host (virtual nodes of
// one host count together; hosts that report no cores are left out).
Shape shape_of(const Topology& topology);

// The all_reduce_spec text the model picks for `shape`: for every power of
// two from 1 B to 2^40 B the candidate predicted fastest (the earlier
// candidate on a tie), neighbouring sizes with the same winner merged, the
// last range unbounded ("pscpu", "pscpu/rechd:65536:pscpu/xring").
// Candidates, in registry order: every host algorithm the model has a
// formula for but `mpi`, flat, and on several nodes each shared-memory
// algorithm over each of them ("pscpu/rechd"). `mpi` is the MPI library's
// own choice, which the model only guesses (docs/SCALING.md measured the
// bare guess 15 to 59% too fast; its calibrated scale is a pair's, and the
// library picks by rank count); shards are not candidates: the model gives them only
// extra messages. `incumbent` (not auto): at each size its plan stays
// unless the winner is predicted more than `margin` faster (0.1: its time
// below incumbent / 1.1); a plan the model has no formula for never stays,
// and an incumbent `mpi` always does (the model cannot judge its guess).
std::string spec_from_model(const Machine& machine, const Shape& shape, const AllReduceSpec& incumbent = {},
                            double margin = 0);

// A .model file that cannot be read or says something unexpected: the
// message names the file, the line and what is wrong.
class ModelFileError : public InvalidArgument {
 public:
  using InvalidArgument::InvalidArgument;
};

// The .model file (docs/SCALING.md, "The .model file"): `#` comments (the
// evidence: machine, layout, date, how each figure was measured) and one
// `key = value` a line, alpha in microseconds, beta and gamma in
// nanoseconds per byte, for each link (shm, intra, inter) alpha_us,
// beta_ns_per_byte and beta_memory_ns_per_byte, then gamma_ns_per_byte,
// gamma_memory_ns_per_byte and cache_bytes (the regimes' boundary), and
// mpi_scale, mpi_scale_memory and shm_direct_scale (optional: 1 where a
// file has none):
//
//   shm.alpha_us = 0.43
//   shm.beta_ns_per_byte = 0.2
//   ...
//   cache_bytes = 2097152
//   mpi_scale = 1.3
//   mpi_scale_memory = 2.1
//   shm_direct_scale = 0.6

// The file's text: `comments` first (each line prefixed "# "), then the
// fifteen parameters.
std::string model_text(const Machine& machine, const std::string& comments);

// Parses a .model file's text (`name` for messages). Every parameter must be
// present exactly once, finite and >= 0 (the three scales > 0, and they
// may be absent: files written before them); unknown keys are errors.
// Throws ModelFileError.
Machine parse_model(const std::string& text, const std::string& name);

// Reads and parses the file at `path`. Throws ModelFileError.
Machine read_model_file(const std::string& path);

}  // namespace strata::model
