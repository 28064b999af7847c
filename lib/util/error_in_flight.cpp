#include "util/error_in_flight.hpp"

#include <exception>
#include <new>

#include "strata/errors.hpp"

namespace strata::util {

ErrorInFlight error_in_flight() noexcept {
  try {
    throw;
  } catch (const DeadlineExceeded& e) {
    return {ErrorKind::deadline_exceeded, e.what()};
  } catch (const InvalidArgument& e) {
    return {ErrorKind::invalid_argument, e.what()};
  } catch (const Mismatch& e) {
    return {ErrorKind::mismatch, e.what()};
  } catch (const PeerFailure& e) {
    return {ErrorKind::peer_failure, e.what()};
  } catch (const Unavailable& e) {
    return {ErrorKind::unavailable, e.what()};
  } catch (const BackendError& e) {
    return {ErrorKind::backend, e.what()};
  } catch (const Corrupted& e) {
    return {ErrorKind::corrupted, e.what()};
  } catch (const Error& e) {
    return {ErrorKind::other_error, e.what()};
  } catch (const std::bad_alloc&) {
    return {ErrorKind::out_of_memory, "out of memory (std::bad_alloc)"};
  } catch (const std::exception& e) {
    return {ErrorKind::std_exception, e.what()};
  } catch (...) {
    return {ErrorKind::unknown, "unknown exception (not a std::exception)"};
  }
}

std::string_view error_name(ErrorKind kind) noexcept {
  switch (kind) {
    case ErrorKind::deadline_exceeded: return "DeadlineExceeded";
    case ErrorKind::invalid_argument: return "InvalidArgument";
    case ErrorKind::mismatch: return "Mismatch";
    case ErrorKind::peer_failure: return "PeerFailure";
    case ErrorKind::unavailable: return "Unavailable";
    case ErrorKind::backend: return "BackendError";
    case ErrorKind::corrupted: return "Corrupted";
    case ErrorKind::other_error: return "Error";
    case ErrorKind::out_of_memory: return "std::bad_alloc";
    case ErrorKind::std_exception: return "std::exception";
    case ErrorKind::unknown: break;
  }
  return "unknown";
}

}  // namespace strata::util
