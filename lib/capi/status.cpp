// Exception -> strata_status, and the per-thread last error message.
#include "capi/status.hpp"

#include <exception>
#include <new>

#include "strata/errors.hpp"
#include "util/where.hpp"

namespace strata::capi {
namespace {

// Per thread, so that concurrent failing calls on different threads (each
// on its own communicator) cannot overwrite each other's message.
thread_local std::string last_message;
// Set instead of last_message when storing it failed (out of memory).
thread_local const char* last_fixed = nullptr;

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
  try {
    throw;
  } catch (const DeadlineExceeded& e) {
    return fail(STRATA_ERR_DEADLINE_EXCEEDED, function, e.what());
  } catch (const InvalidArgument& e) {
    return fail(STRATA_ERR_INVALID_ARGUMENT, function, e.what());
  } catch (const Mismatch& e) {
    return fail(STRATA_ERR_MISMATCH, function, e.what());
  } catch (const PeerFailure& e) {
    return fail(STRATA_ERR_PEER_FAILURE, function, e.what());
  } catch (const Unavailable& e) {
    return fail(STRATA_ERR_UNAVAILABLE, function, e.what());
  } catch (const BackendError& e) {
    return fail(STRATA_ERR_BACKEND, function, e.what());
  } catch (const Corrupted& e) {
    return fail(STRATA_ERR_CORRUPTED, function, e.what());
  } catch (const Error& e) {
    // A strata::Error subclass this boundary does not know yet.
    return fail(STRATA_ERR_INTERNAL, function, e.what());
  } catch (const std::bad_alloc&) {
    return fail(STRATA_ERR_INTERNAL, function, "out of memory (std::bad_alloc)");
  } catch (const std::exception& e) {
    return fail(STRATA_ERR_INTERNAL, function, e.what());
  } catch (...) {
    return fail(STRATA_ERR_INTERNAL, function, "unknown exception (not a std::exception)");
  }
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
