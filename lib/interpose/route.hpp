// What every routed call does around its decision (decide.hpp), whether it
// blocks (collectives.cpp) or starts a request (started.cpp): find or make
// the communicator's strata side, log where the call went, run strata code
// under the re-entrancy guard.
#pragma once

#include <mpi.h>

#include <exception>
#include <string>

#include "comm_cache.hpp"
#include "decide.hpp"
#include "errors.hpp"
#include "guard.hpp"
#include "strata/options.hpp"

namespace strata::interpose {

// The communicator a routed call runs on: nullptr when the decision sends
// it to MPI, or when creating the entry fails (`d` then says why, or
// `error` receives what creating it threw). Collective on first use of
// `comm` (comm_cache.hpp).
CommEntry* strata_entry(MPI_Comm comm, Decision& d, std::exception_ptr& error);

// The call in MPI's terms, for the INFO line (log_to_mpi, log_to_strata).
struct CallTerms {
  MPI_Datatype type;
  const MPI_Op* op;  // null for calls without one
  Collective collective;
  MPI_Datatype sendtype = MPI_DATATYPE_NULL;
};

// What the INFO line says of the call's data: "MPI_INT MPI_LAND",
// "MPI_FLOAT", "MPI_INT to MPI_BYTE" (an MPI_Allgather whose send
// datatype differs). Taken when the call starts, for a line said later
// (the program may free a derived datatype once the call started).
std::string describe_call(const CallTerms& terms);

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

// The two lines for a call whose decision was taken when it started and
// whose data is `described` (describe_call then): log_to_strata's, and
// log_to_mpi's for a call that goes to MPI because strata could not start
// on its communicator (d.why == Why::unavailable). Never throw.
void log_to_strata(const char* call, CommEntry& entry, const Decision& d, Collective collective,
                   const std::string& described) noexcept;
void log_unavailable(const char* call, MPI_Comm comm, const Decision& d, const std::string& described) noexcept;

// Every routed call's start, after its decision: the strata communicator to
// run on, with the INFO line said; or null, with `answer` holding MPI's
// answer (`to_mpi()`, the call made by MPI, its line said) or the error
// creating the communicator's strata side raised (reported).
template <typename ToMpi>
CommEntry* route(const char* call, MPI_Comm comm, Decision& d, const CallTerms& terms, ToMpi&& to_mpi, int& answer) {
  std::exception_ptr error;
  CommEntry* entry = strata_entry(comm, d, error);
  if (error) {
    answer = report_error(call, comm, error);
    return nullptr;
  }
  if (!entry) {
    log_to_mpi(call, comm, d, terms.type, terms.op, terms.sendtype);
    answer = to_mpi();
    return nullptr;
  }
  log_to_strata(call, *entry, d, terms.collective, terms.type, terms.op, terms.sendtype);
  return entry;
}

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
