// Judging a Topology: which ranks are unbound or straddle NUMA domains, the
// launcher flags that fix it, and the once-per-process warning. Internal.
#pragma once

#include <string>
#include <vector>

#include "strata/topology.hpp"

namespace strata::topo {

// Bound to every core of a node that has more than one: the OS may move the
// rank anywhere, so it has no cache or NUMA locality.
bool unbound(const Topology& topology, const RankInfo& rank);

// Bound to cores of more than one NUMA domain (and not simply unbound).
bool spans_numa(const Topology& topology, const RankInfo& rank);

// One line per problem found (empty when binding is fine), each naming the
// ranks and the mpirun/srun flags that fix it.
std::vector<std::string> binding_advice(const Topology& topology);

// Logs binding_advice as warnings, at most once per process.
void warn_about_binding_once(const Topology& topology);

}  // namespace strata::topo
