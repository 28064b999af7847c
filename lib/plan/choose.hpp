// Algorithm selection: from a spec, a collective, a message size, the
// memory it lives in and the caller's Implementation to the algorithm (and
// shard count) that runs, and how it runs over the communicator (flat,
// flat over the node's shared memory, or hierarchical). This is the one
// place that decision is made; the executor (lib/exec) only carries it out.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "plan/algorithm.hpp"
#include "plan/numerics.hpp"
#include "plan/spec.hpp"
#include "strata/types.hpp"

namespace strata::plan {

using strata::Collective;  // all_reduce, reduce, broadcast, reduce_scatter, all_gather (public, types.hpp)

// How the chosen algorithm runs over the communicator.
enum class Shape {
  flat,          // over the whole communicator
  hierarchical,  // "a/b": `algorithm` inside each node, `cross` across nodes, then back inside the node
};

struct Choice {
  const Algorithm* algorithm = nullptr;  // flat, or the intra-node level of "a/b"
  const Algorithm* cross = nullptr;      // hierarchical only
  int shards = 1;                        // flat: the algorithm's; hierarchical: the cross-node level's
  Shape shape = Shape::flat;
  // The flat or intra-node level runs over the node's shared-memory
  // segment (the algorithm asks for it and the node has several ranks).
  bool shared_memory = false;

  std::string name() const;      // "xring", "pscpu/xring"
  std::string describe() const;  // with "#shards" when > 1: "xring#2", "pscpu/xring#2"
};

// The facts about the communicator a choice depends on.
struct Layout {
  int node_count = 1;  // nodes (real or virtual)
  int local_size = 1;  // ranks on this rank's node
  // CUDA memory: whether NCCL may run over the whole communicator, inside
  // every node and across nodes. The GPU control plane's verdicts
  // (lib/topo/gpu_plane.hpp), identical on every rank, so every rank plans
  // the same; true where nothing is known (host memory, tests).
  bool nccl_world = true;
  bool nccl_node = true;
  bool nccl_cross = true;
  // Host all-reduce under "auto" from the cost model (api/model_auto.hpp):
  // the spec the model picked for this layout, identical on every rank;
  // null: the fixed table.
  std::shared_ptr<const Spec> modelled_all_reduce{};
  // Config::reproducible (agreed by every rank), and the communicator's
  // ranks, which decide whether a call takes canonical_choice.
  Reproducible reproducible = Reproducible::off;
  int ranks = 1;
};

// The table "auto" stands for: host memory, one node: shared-memory pscpu
// for every collective; several nodes: hierarchical plans (reduce and
// broadcast: shared memory inside the node, tree then xring across)
// (measurements behind them: docs/ALGORITHMS.md, docs/PERFORMANCE.md). CUDA memory: flat nccl on
// one node and for reduce/broadcast, "nccl/nccl" on several nodes; where
// the layout's NCCL flags forbid a level, psgpu inside the node and the
// host tables' levels (through pinned copies) instead (docs/GPU.md).
// reduce_scatter and all_gather run flat: pscpu on one node, xring on
// several; CUDA: nccl where NCCL may run over the whole communicator, else
// xring through pinned copies. Host all-reduce takes the layout's
// modelled_all_reduce instead where it has one.
const Spec& default_spec(Collective collective, Memory memory, const Layout& layout);
// The same for a layout of `node_count` nodes where NCCL may run everywhere.
const Spec& default_spec(Collective collective, Memory memory, int node_count);

// The spec a communicator uses: `configured` if non-empty, else
// $STRATA_SPEC, else the spec in the file named by $STRATA_SPEC_FILE, else
// "auto". Names are checked against `known`. Throws InvalidArgument for an
// invalid spec or an unreadable file.
Spec resolve_spec(std::string_view configured, Catalogue known);

// The effective size -> algorithm map of all-reduce on host memory, one
// line, for STRATA_DEBUG=INFO and strata-topo:
// "auto = [0 .. 65536 B: pscpu/rechd] [65537 .. 16777216 B: pscpu/pscpu] [16777217 B and up: pscpu/xring]"
// ("auto (cost model) = ..." where the layout has a modelled spec).
std::string describe_map(const Spec& spec, const Layout& layout);
// The same for a layout of `node_count` nodes without a model.
std::string describe_map(const Spec& spec, int node_count);

// What a call reduces: its op and dtype.
struct Reduction {
  ReduceOp op = ReduceOp::sum;
  DataType dtype = DataType::f32;
};

// Whether a call takes canonical_choice() instead of the spec's: the layout
// is reproducible, the collective reduces floating-point data (integer
// results do not depend on the order), exact mode does not sum it in fixed
// point (exec/reproducible.hpp: its integer sums run on any plan), and
// there are three or more ranks or the op is min or max. (Two ranks' sum or
// product is one IEEE operation, the same bits in either order, so every
// plan gives the canonical bits; min and max are not symmetric in their
// bits: a zero's sign and a NaN's payload follow the order.)
bool takes_canonical(const Layout& layout, Collective collective, Reduction reduction);

// The plan of the reproducible modes, the same whatever the spec, layout,
// size or memory: pscpu flat over MPI, so that every element is reduced by
// one owner folding every rank's contribution in rank order 0..n-1 (host
// memory directly, CUDA memory through pinned copies). Throws Unavailable
// if pscpu is not in `known`.
Choice canonical_choice(Catalogue known);

// Pick the algorithm for one call of `bytes` bytes on `memory`.
// - implementation = ring forces xring; nccl forces nccl (CUDA memory only).
// - "a/b" runs hierarchically on several nodes: all-reduce on any memory,
//   reduce and broadcast on host memory; otherwise (one node, rooted calls
//   on CUDA memory, reduce_scatter and all_gather, a cross level that does
//   not serve the call) `a` runs flat.
// - An algorithm that cannot serve the call (a CUDA-only algorithm on host
//   memory, a reduce or broadcast it does not implement) falls back to the
//   host default table's choice (CUDA tensors run it through pinned
//   copies); a CUDA-only cross level on host memory leaves `a` flat.
// Throws InvalidArgument for implementation = nccl on host memory.
Choice choose(Catalogue known, const Spec& spec, Collective collective, std::size_t bytes,
              Implementation implementation, Memory memory, const Layout& layout);

}  // namespace strata::plan
