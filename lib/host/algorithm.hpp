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
};

// Its entry point for `collective` (null where it declines).
inline CollectiveFn entry_point(const Algorithm& algorithm, Collective collective) {
  switch (collective) {
    case Collective::all_reduce: return algorithm.all_reduce;
    case Collective::reduce: return algorithm.reduce;
    case Collective::broadcast: return algorithm.broadcast;
  }
  return nullptr;
}

}  // namespace strata::host
