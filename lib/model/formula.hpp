// What an algorithm's cost formula is written with. Each host algorithm's
// file (lib/host/<name>.cpp) states its own formula in its descriptor
// (plan::Algorithm::model); lib/model/cost_model.cpp composes them into
// plans (flat, hierarchical "a/b"), regimes and cores. docs/SCALING.md
// writes the formulas out. Times add: on a CPU the same core copies what it
// receives and reduces it, so moving and reducing do not overlap.
#pragma once

#include <string_view>

#include "strata/cost_model.hpp"

namespace strata::model {

struct Group;
struct Cost;

// An all-reduce of `bytes` bytes per rank over `group` with `shards` shards
// (the machine already in the call's regime: cost_model.cpp's in_regime).
using CostFn = Cost (*)(const Group& group, double bytes, int shards);

struct Formula {
  CostFn cost = nullptr;  // null: the model has no formula (the GPU algorithms)
  // The formula guesses at an implementation strata does not control (the
  // MPI library's own): spec_from_model never offers the algorithm as a
  // candidate, and an incumbent naming it always stays.
  bool guessed = false;
};

// The formula of the registered algorithm `name` (null where it has none or
// no algorithm has that name). Defined by the registry (lib/exec/registry.cpp).
const Formula* formula_of(std::string_view name);

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

// A phase's cost: `time`, its slowest rank's (the critical path), and
// `busy`, the time an average rank of the phase spends at work in it
// (moving and reducing bytes; a rank that waits for a peer yields its
// core: util::Backoff, lib/util/deadline.hpp). Where ranks outnumber cores
// they take turns at the work, so a phase lasts at least the machine's
// whole busy time over its cores (cost_model.cpp's on_cores). In a ring,
// halving-doubling or pscpu every rank works the whole time (busy = time)
// and the whole time scales; in a binomial tree most ranks wait in most
// rounds.
struct Cost {
  double time = 0;
  double busy = 0;
};

// The building blocks the formulas share.

Cost everyone_busy(double time);

// The link a step between ranks `distance` apart uses, when `senders` ranks
// of each node send at once: inside the node while the partner is in it
// (consecutive placement, power-of-two distances), else the inter-node link
// with its bandwidth shared by the senders.
Link step_link(const Group& g, int distance, int senders);

// The link a ring step uses: inside the node on one node; on several, the
// slower of a hop inside a node (when nodes have several ranks) and the one
// hop leaving each node (one sender per node at a time).
Link ring_link(const Group& g);

// A ring's 2(n-1) steps of `messages` messages of m/n bytes each, and the
// reduction of n-1 segments.
Cost ring_steps(const Group& g, double m, double messages);

int floor_pow2(int n);
int ceil_log2(int n);

}  // namespace strata::model
