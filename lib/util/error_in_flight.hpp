// Which of strata's errors the exception in flight is, for the boundaries
// that report errors in their own terms: the C API's status codes, a trace
// span's outcome. One ladder of catch clauses, so that every boundary
// knows every error class (a new one is added here once).
#pragma once

#include <string_view>

namespace strata::util {

enum class ErrorKind {
  deadline_exceeded,
  invalid_argument,
  mismatch,
  peer_failure,
  unavailable,
  backend,
  corrupted,
  other_error,    // a strata::Error subclass not listed above
  out_of_memory,  // std::bad_alloc
  std_exception,  // any other std::exception
  unknown,        // not a std::exception
};

struct ErrorInFlight {
  ErrorKind kind;
  const char* message;  // what(), or a fixed text for out_of_memory and unknown
};

// The exception being handled. Call only inside a catch block; `message`
// lives as long as that exception. Never throws.
ErrorInFlight error_in_flight() noexcept;

// The class's name: "DeadlineExceeded", "InvalidArgument", "Mismatch",
// "PeerFailure", "Unavailable", "BackendError", "Corrupted", "Error",
// "std::bad_alloc", "std::exception" or "unknown".
std::string_view error_name(ErrorKind kind) noexcept;

}  // namespace strata::util
