// strata's exceptions, reported the way MPI reports errors: an MPI error
// code passed to the communicator's error handler (PMPI_Comm_call_errhandler)
// and returned. So MPI_ERRORS_ARE_FATAL (MPI's default) aborts the job,
// MPI_ERRORS_RETURN returns the code, and a program's own handler runs.
#pragma once

#include <mpi.h>

#include <exception>

namespace strata::interpose {

// The MPI error class for a strata failure:
//   InvalidArgument            -> MPI_ERR_ARG
//   Mismatch                   -> MPI_ERR_TRUNCATE (ranks disagreed on sizes)
//   BackendError from MPI      -> the MPI code itself
//   std::bad_alloc             -> MPI_ERR_NO_MEM
//   DeadlineExceeded, PeerFailure, Unavailable, other -> MPI_ERR_OTHER
// Never throws.
int mpi_error_code(const std::exception_ptr& error) noexcept;

// Reports `error` (raised by strata inside `call` on `comm`): one WARN line
// with strata's message, then the communicator's error handler. Returns the
// code for the intercepted function to return (if the handler returns).
int report_error(const char* call, MPI_Comm comm, const std::exception_ptr& error) noexcept;

// Reports an erroneous use of a routed request that MPI would reject, such
// as MPI_Start on one that is still active: one WARN line ("`call` on comm
// ...: `what`"), then the communicator's error handler with `code`.
// Returns `code`. Never throws.
int report_misuse(const char* call, MPI_Comm comm, int code, const char* what) noexcept;

}  // namespace strata::interpose
