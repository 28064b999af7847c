#include "errors.hpp"

#include <fmt/format.h>

#include <new>
#include <string>

#include "comm_cache.hpp"
#include "log.hpp"
#include "strata/errors.hpp"

namespace strata::interpose {
namespace {

std::string code_name(int code) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  if (PMPI_Error_string(code, text, &length) != MPI_SUCCESS) return fmt::format("MPI error {}", code);
  return std::string(text, length);
}

}  // namespace

int mpi_error_code(const std::exception_ptr& error) noexcept {
  try {
    std::rethrow_exception(error);
  } catch (const InvalidArgument&) {
    return MPI_ERR_ARG;
  } catch (const Mismatch&) {
    return MPI_ERR_TRUNCATE;
  } catch (const BackendError& e) {
    const bool mpi_code = e.backend() == "MPI" && e.code() > MPI_SUCCESS && e.code() <= MPI_ERR_LASTCODE;
    return mpi_code ? e.code() : MPI_ERR_OTHER;
  } catch (const std::bad_alloc&) {
    return MPI_ERR_NO_MEM;
  } catch (...) {
    return MPI_ERR_OTHER;
  }
}

int report_error(const char* call, MPI_Comm comm, const std::exception_ptr& error) noexcept {
  const int code = mpi_error_code(error);
  try {
    std::string what = "unknown error";
    try {
      std::rethrow_exception(error);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    say(Level::warn, fmt::format("{} on comm {} failed in strata: {} (reported to MPI as {})", call,
                                      comm_label(comm), what, code_name(code)));
  } catch (...) {
  }
  // The communicator's handler decides (MPI_ERRORS_ARE_FATAL aborts); the
  // call returns `code` whatever the handler call itself returns.
  PMPI_Comm_call_errhandler(comm, code);
  return code;
}

int report_misuse(const char* call, MPI_Comm comm, int code, const char* what) noexcept {
  try {
    say(Level::warn, fmt::format("{} on comm {}: {} (reported to MPI as {})", call, comm_label(comm), what,
                                 code_name(code)));
  } catch (...) {
  }
  PMPI_Comm_call_errhandler(comm, code);
  return code;
}

}  // namespace strata::interpose
