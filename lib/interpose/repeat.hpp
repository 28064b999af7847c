// A program repeats its calls: a training loop, a benchmark, a solver's
// residual all-reduce make the same call with the same arguments on the
// same communicator again and again. Deciding where such a call goes
// (decide.hpp, route.hpp) is a pure function of its arguments and of the
// communicator's entry, so the last few routed MPI_Allreduce, MPI_Reduce
// and MPI_Bcast calls are remembered, and an exact repeat takes its
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

// Everything a blocking reduction's or broadcast's decision reads.
struct CallKey {
  Collective collective;
  const void* send;  // MPI_Bcast: its buffer
  const void* recv;  // MPI_Bcast: null
  int count;
  MPI_Datatype type;
  MPI_Op op;  // MPI_Bcast: MPI_OP_NULL
  int root;   // MPI_Allreduce: kAllRanks
  MPI_Comm comm;

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
// rules above allow (`decision` must describe a predefined datatype: a
// reduction's, or a broadcast that is not packed). Never throws.
void remember(const CallKey& key, CommEntry* entry, const Decision& decision) noexcept;

}  // namespace strata::interpose
