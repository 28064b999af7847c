// What every routed call does around its decision (decide.hpp), whether it
// blocks (collectives.cpp) or starts a request (started.cpp): find or make
// the communicator's strata side, log where the call went, run strata code
// under the re-entrancy guard.
#pragma once

#include <mpi.h>

#include <exception>

#include "comm_cache.hpp"
#include "decide.hpp"
#include "guard.hpp"
#include "strata/options.hpp"

namespace strata::interpose {

// The communicator a routed call runs on: nullptr when the decision sends
// it to MPI, or when creating the entry fails (`d` then says why, or
// `error` receives what creating it threw). Collective on first use of
// `comm` (comm_cache.hpp).
CommEntry* strata_entry(MPI_Comm comm, Decision& d, std::exception_ptr& error);

// The INFO line for a call that goes to MPI: "<call> on comm <label>
// <datatype> [<op>] -> PMPI (<why>)". `sendtype`: MPI_Allgather's, unless
// MPI_IN_PLACE (MPI_DATATYPE_NULL for the other calls). Never throws.
void log_to_mpi(const char* call, MPI_Comm comm, const Decision& d, MPI_Datatype type, const MPI_Op* op,
                MPI_Datatype sendtype = MPI_DATATYPE_NULL) noexcept;

// The INFO line for a call routed to strata: "... -> strata (f32 sum,
// pscpu)": the call in MPI's terms, as in the PMPI lines, then what strata
// runs (the algorithm its spec picks for the call's larger buffer:
// reduce_scatter's input, all_gather's output). Never throws.
void log_to_strata(const char* call, CommEntry& entry, const Decision& d, Collective collective, MPI_Datatype type,
                   const MPI_Op* op, MPI_Datatype sendtype = MPI_DATATYPE_NULL) noexcept;

// The options of every routed call (STRATA_INTERPOSE_TIMEOUT).
CommunicationOptions call_options();

// Runs `work` inside strata (InsideStrata: strata's own MPI calls go to
// MPI); returns the exception it raised, if any. The guard ends before the
// caller reports the error, so that an error handler calling MPI is treated
// like the application.
template <typename Work>
std::exception_ptr run_in_strata(Work&& work) {
  InsideStrata inside;
  try {
    work();
  } catch (...) {
    return std::current_exception();
  }
  return nullptr;
}

}  // namespace strata::interpose
