// util::error_in_flight: every error class strata raises is told apart (by
// the C API's codes and a trace span's outcome alike), most derived first.
#include <doctest/doctest.h>

#include <functional>
#include <new>
#include <stdexcept>
#include <string>

#include "strata/errors.hpp"
#include "util/error_in_flight.hpp"

using namespace strata;
using util::ErrorKind;

namespace {

// What error_in_flight said inside the catch block, its message copied
// there (the message lives only as long as the exception).
struct Seen {
  ErrorKind kind = ErrorKind::unknown;
  std::string message;
};

template <typename Throw>
Seen caught(Throw&& raise) {
  try {
    raise();
  } catch (...) {
    const util::ErrorInFlight error = util::error_in_flight();
    return {error.kind, error.message};
  }
  FAIL("nothing was thrown");
  return {};
}

void classifies(const std::function<void()>& raise, ErrorKind kind, const char* name) {
  const Seen error = caught(raise);
  CHECK(error.kind == kind);
  CHECK(error.message == "what happened");
  CHECK(util::error_name(error.kind) == name);
}

}  // namespace

TEST_CASE("each strata error class is its own kind") {
  classifies([] { throw DeadlineExceeded("what happened", {1}); }, ErrorKind::deadline_exceeded, "DeadlineExceeded");
  classifies([] { throw InvalidArgument("what happened"); }, ErrorKind::invalid_argument, "InvalidArgument");
  classifies([] { throw Mismatch("what happened"); }, ErrorKind::mismatch, "Mismatch");
  classifies([] { throw PeerFailure("what happened"); }, ErrorKind::peer_failure, "PeerFailure");
  classifies([] { throw Unavailable("what happened"); }, ErrorKind::unavailable, "Unavailable");
  classifies([] { throw BackendError("what happened", "MPI", 1, "host", 0); }, ErrorKind::backend, "BackendError");
  classifies([] { throw Corrupted("what happened"); }, ErrorKind::corrupted, "Corrupted");
  classifies([] { throw Error("what happened"); }, ErrorKind::other_error, "Error");
}

TEST_CASE("what is not strata's") {
  classifies([] { throw std::runtime_error("what happened"); }, ErrorKind::std_exception, "std::exception");
  const Seen memory = caught([] { throw std::bad_alloc(); });
  CHECK(memory.kind == ErrorKind::out_of_memory);
  CHECK(util::error_name(memory.kind) == "std::bad_alloc");
  const Seen other = caught([] { throw 42; });
  CHECK(other.kind == ErrorKind::unknown);
  CHECK(util::error_name(other.kind) == "unknown");
  CHECK(other.message.find("not a std::exception") != std::string::npos);
}
