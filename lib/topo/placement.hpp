// Whether ranks outnumber the cores they may run on: what decides how a
// waiting rank waits (util::set_cores_shared). Internal.
#pragma once

#include "strata/topology.hpp"

namespace strata::topo {

// True when the ranks on `rank`'s host (ranks with its hostname: virtual
// nodes of one host count together) are more than the distinct cores they
// are bound to (all of the host's cores for unbound ranks): some rank must
// then share a core, and a rank that spins while waiting takes the core
// from the peer it waits for.
bool cores_shared(const Topology& topology, int rank);

}  // namespace strata::topo
