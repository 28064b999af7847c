// A program repeats its calls: a training loop, a benchmark, a solver's
// residual all-reduce make the same call with the same arguments on the
// same communicator again and again. Deciding where such a call goes
// (decide.hpp, route.hpp) is a pure function of its arguments and of the
// communicator's entry, so the last few routed calls of each blocking
// collective are remembered, and an exact repeat takes its
// decision and entry without deciding again (140-280 instructions fewer per small call;
// docs/PERFORMANCE.md).
//
// What keeps a remembered decision true:
//   - handles: only calls on predefined datatypes and ops are remembered
//     (a freed derived datatype's handle may come back as another type);
//     a communicator's handle may come back too, but then its entry went
//     first, which changes comm_cache's entry_generation() and forgets
//     every remembered call;
//   - the process: process_refusal() is asked on every call (one load once
//     MPI runs; MPI_Finalize turns it on);
//   - the log: at TRACE every call is logged, so nothing is remembered.
// For the routing path only, which never runs concurrently (settings.hpp).
#pragma once

#include <mpi.h>

#include "comm_cache.hpp"
#include "decide.hpp"
#include "strata/types.hpp"

namespace strata::interpose {

// Everything a blocking collective's decision reads.
struct CallKey {
  Collective collective;
  const void* send;  // MPI_Bcast: its buffer
  const void* recv;  // MPI_Bcast: null
  int count;         // MPI_Allgather: recvcount
  MPI_Datatype type; // MPI_Allgather: recvtype
  MPI_Op op;  // MPI_Bcast, MPI_Allgather: MPI_OP_NULL
  int root;   // MPI_Allreduce, MPI_Reduce_scatter_block, MPI_Allgather: kAllRanks
  MPI_Comm comm;
  int send_count = 0;                         // MPI_Allgather only
  MPI_Datatype send_type = MPI_DATATYPE_NULL;  // MPI_Allgather only

  bool operator==(const CallKey&) const = default;
};

struct KnownRoute {
  CommEntry* entry;
  Decision decision;
};

// The decision and entry remembered for exactly `key`, when MPI runs and
// nothing refuses routing; else nullptr. Never throws.
const KnownRoute* repeated(const CallKey& key) noexcept;

// Remembers that `key` went to strata with `decision` on `entry`, when the
// rules above allow (`decision` must describe predefined datatypes: a
// reduction's, or a broadcast or all-gather that packs nothing). Never
// throws.
void remember(const CallKey& key, CommEntry* entry, const Decision& decision) noexcept;

// A call's decision: the one remembered for exactly `key` (`known` says
// so, with its entry), else `decide()` (`known` null: the caller
// remembers it once the call is routed). Blocking and non-blocking calls
// share it: the decision is the same function of the arguments.
struct Recalled {
  Decision decision;
  const KnownRoute* known = nullptr;
};
template <typename Decide>
Recalled recall(const CallKey& key, Decide&& decide) {
  if (const KnownRoute* known = repeated(key)) return {known->decision, known};
  return {decide(), nullptr};
}

}  // namespace strata::interpose
