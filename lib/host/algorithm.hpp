// A host algorithm: what the planner knows about it (plan::Algorithm) and
// its entry points, each running one collective over a Transport. One file
// per algorithm (xring.cpp, rechd.cpp, ...) defines one of these, named
// after the algorithm; lib/exec/algorithms.def lists them.
#pragma once

#include "plan/algorithm.hpp"
#include "plan/job.hpp"
#include "host/transport.hpp"

namespace strata::host {

using plan::Job;

using CollectiveFn = void (*)(Transport&, const Job&);

struct Algorithm {
  plan::Algorithm info;     // name, memory = host, reduce/broadcast served, shared memory
  CollectiveFn all_reduce;  // required
  CollectiveFn reduce;      // non-null exactly when info.reduce
  CollectiveFn broadcast;   // non-null exactly when info.broadcast
  // Optional: the level operations over the whole group (owners = its
  // size), as plan::Level defines them: member s ends with owner slice s of
  // the reduction in job.out / every member ends with every owner's slice of
  // job.out, in place. Null: the level all-reduces the whole buffer /
  // sends each slice to every member (exec/host_levels.cpp).
  CollectiveFn reduce_scatter = nullptr;
  CollectiveFn all_gather = nullptr;
};

// Its entry point for `collective` (null where it declines). reduce_scatter
// and all_gather have none: they run through the levels (exec/blockwise.hpp).
inline CollectiveFn entry_point(const Algorithm& algorithm, Collective collective) {
  switch (collective) {
    case Collective::all_reduce: return algorithm.all_reduce;
    case Collective::reduce: return algorithm.reduce;
    case Collective::broadcast: return algorithm.broadcast;
    case Collective::reduce_scatter:
    case Collective::all_gather: return nullptr;
  }
  return nullptr;
}

}  // namespace strata::host
