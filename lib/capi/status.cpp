// Exception -> strata_status, and the per-thread last error message.
#include "capi/status.hpp"

#include <exception>
#include <new>

#include "util/error_in_flight.hpp"
#include "util/where.hpp"

namespace strata::capi {
namespace {

// Per thread, so that concurrent failing calls on different threads (each
// on its own communicator) cannot overwrite each other's message.
thread_local std::string last_message;
// Set instead of last_message when storing it failed (out of memory).
thread_local const char* last_fixed = nullptr;

// The C API's code for each kind of error (an unknown strata::Error
// subclass, and anything not strata's, is internal).
strata_status status_of(util::ErrorKind kind) {
  switch (kind) {
    case util::ErrorKind::deadline_exceeded: return STRATA_ERR_DEADLINE_EXCEEDED;
    case util::ErrorKind::invalid_argument: return STRATA_ERR_INVALID_ARGUMENT;
    case util::ErrorKind::mismatch: return STRATA_ERR_MISMATCH;
    case util::ErrorKind::peer_failure: return STRATA_ERR_PEER_FAILURE;
    case util::ErrorKind::unavailable: return STRATA_ERR_UNAVAILABLE;
    case util::ErrorKind::backend: return STRATA_ERR_BACKEND;
    case util::ErrorKind::corrupted: return STRATA_ERR_CORRUPTED;
    case util::ErrorKind::other_error:
    case util::ErrorKind::out_of_memory:
    case util::ErrorKind::std_exception:
    case util::ErrorKind::unknown: break;
  }
  return STRATA_ERR_INTERNAL;
}

}  // namespace

strata_status fail(strata_status status, const char* function, const char* message) noexcept {
  try {
    // The location first, as in every strata message, then the function.
    last_message = util::located(std::string(function) + ": " + std::string(util::unlocated(message)));
    last_fixed = nullptr;
  } catch (...) {
    last_fixed = "strata [?]: out of memory while recording an error message";
  }
  return status;
}

strata_status fail_current(const char* function) noexcept {
  const util::ErrorInFlight error = util::error_in_flight();
  return fail(status_of(error.kind), function, error.message);
}

const char* last_error() noexcept { return last_fixed ? last_fixed : last_message.c_str(); }

}  // namespace strata::capi

// The C entry points of this concept (declared in strata/strata.h).

const char* strata_last_error(void) { return strata::capi::last_error(); }

const char* strata_status_name(strata_status status) {
  switch (static_cast<int>(status)) {
    case STRATA_OK: return "STRATA_OK";
    case STRATA_ERR_INVALID_ARGUMENT: return "STRATA_ERR_INVALID_ARGUMENT";
    case STRATA_ERR_DEADLINE_EXCEEDED: return "STRATA_ERR_DEADLINE_EXCEEDED";
    case STRATA_ERR_MISMATCH: return "STRATA_ERR_MISMATCH";
    case STRATA_ERR_PEER_FAILURE: return "STRATA_ERR_PEER_FAILURE";
    case STRATA_ERR_UNAVAILABLE: return "STRATA_ERR_UNAVAILABLE";
    case STRATA_ERR_BACKEND: return "STRATA_ERR_BACKEND";
    case STRATA_ERR_INTERNAL: return "STRATA_ERR_INTERNAL";
    case STRATA_ERR_CORRUPTED: return "STRATA_ERR_CORRUPTED";
  }
  return "STRATA_ERR_UNKNOWN";
}
