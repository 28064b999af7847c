// The C API's error boundary: run a body, turn whatever it throws into a
// strata_status and keep the message as this thread's last error, so that
// no exception ever crosses into C or Fortran.
#pragma once

#include <string>

#include "strata/strata.h"

namespace strata::capi {

// Records `status` and "strata [host:rank]: `function`: `message`" (the
// message's own location moved to the front) as this thread's last error
// and returns `status`. Never throws (if the message cannot be stored, a
// fixed "out of memory" text stands in for it).
strata_status fail(strata_status status, const char* function, const char* message) noexcept;

// Call only inside a catch block: maps the exception being handled to its
// status (InvalidArgument -> STRATA_ERR_INVALID_ARGUMENT, ...; any other
// strata::Error, std::bad_alloc, std::exception or non-exception ->
// STRATA_ERR_INTERNAL) and records it with fail().
strata_status fail_current(const char* function) noexcept;

// This thread's last error message; "" if no call has failed on it yet.
const char* last_error() noexcept;

// Runs body(); STRATA_OK if it returns, else fail_current(function).
template <typename Body>
strata_status guarded(const char* function, Body&& body) noexcept {
  try {
    body();
    return STRATA_OK;
  } catch (...) {
    return fail_current(function);
  }
}

}  // namespace strata::capi
