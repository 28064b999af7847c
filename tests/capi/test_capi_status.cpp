// The C API's error boundary (lib/capi/status.hpp), single process: every
// exception class maps to its strata_status with its message kept as the
// thread's last error, after the location and the C function's name
// ("strata [host:?]: strata_test: ..."); std::bad_alloc,
// other std::exceptions and non-exceptions map to STRATA_ERR_INTERNAL;
// nothing escapes; successful calls leave the last error alone; the last
// error is per thread.
#include <doctest/doctest.h>

#include <new>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "capi/status.hpp"
#include "strata/errors.hpp"
#include "strata/strata.h"
#include "strata/version.hpp"

using strata::capi::guarded;

namespace {

// Whether the last error is "strata [host:rank]: " + `text`.
bool last_error_is(const std::string& text) {
  const std::string message = strata_last_error();
  const std::size_t end = message.find("]: ");
  return message.rfind("strata [", 0) == 0 && end != std::string::npos && message.substr(end + 3) == text;
}

template <typename Exception, typename... Args>
strata_status throwing(Args&&... args) {
  return guarded("strata_test", [&] { throw Exception(std::forward<Args>(args)...); });
}

}  // namespace

TEST_CASE("each exception class maps to its status, with the message") {
  CHECK(throwing<strata::InvalidArgument>("root = 9") == STRATA_ERR_INVALID_ARGUMENT);
  CHECK_MESSAGE(last_error_is("strata_test: root = 9"), strata_last_error());
  CHECK(throwing<strata::DeadlineExceeded>("late", std::vector<int>{3}) == STRATA_ERR_DEADLINE_EXCEEDED);
  CHECK_MESSAGE(last_error_is("strata_test: late"), strata_last_error());
  CHECK(throwing<strata::Mismatch>("counts differ") == STRATA_ERR_MISMATCH);
  CHECK_MESSAGE(last_error_is("strata_test: counts differ"), strata_last_error());
  CHECK(throwing<strata::PeerFailure>("broken") == STRATA_ERR_PEER_FAILURE);
  CHECK(throwing<strata::Unavailable>("no GPU") == STRATA_ERR_UNAVAILABLE);
  CHECK_MESSAGE(last_error_is("strata_test: no GPU"), strata_last_error());
  CHECK(throwing<strata::BackendError>("MPI_Isend failed", "MPI", 5, "host", 0) == STRATA_ERR_BACKEND);
  CHECK_MESSAGE(last_error_is("strata_test: MPI_Isend failed"), strata_last_error());
  CHECK(throwing<strata::Corrupted>("sums differ") == STRATA_ERR_CORRUPTED);
  CHECK_MESSAGE(last_error_is("strata_test: sums differ"), strata_last_error());
}

TEST_CASE("anything else is STRATA_ERR_INTERNAL and never escapes") {
  CHECK(throwing<strata::Error>("a new kind of error") == STRATA_ERR_INTERNAL);
  CHECK_MESSAGE(last_error_is("strata_test: a new kind of error"), strata_last_error());
  CHECK(throwing<std::bad_alloc>() == STRATA_ERR_INTERNAL);
  CHECK_MESSAGE(last_error_is("strata_test: out of memory (std::bad_alloc)"), strata_last_error());
  CHECK(throwing<std::out_of_range>("vector::at") == STRATA_ERR_INTERNAL);
  CHECK_MESSAGE(last_error_is("strata_test: vector::at"), strata_last_error());
  CHECK(guarded("strata_test", [] { throw 42; }) == STRATA_ERR_INTERNAL);
  CHECK(std::string(strata_last_error()).find("unknown exception") != std::string::npos);
}

TEST_CASE("a successful call returns STRATA_OK and keeps the last error") {
  CHECK(throwing<strata::InvalidArgument>("first") == STRATA_ERR_INVALID_ARGUMENT);
  int ran = 0;
  CHECK(guarded("strata_test", [&] { ran = 1; }) == STRATA_OK);
  CHECK(ran == 1);
  CHECK_MESSAGE(last_error_is("strata_test: first"), strata_last_error());
}

TEST_CASE("the last error is per thread") {
  CHECK(throwing<strata::InvalidArgument>("main thread") == STRATA_ERR_INVALID_ARGUMENT);
  std::string before, after;
  std::thread other([&] {
    before = strata_last_error();  // nothing failed on this thread yet
    throwing<strata::Unavailable>("other thread");
    after = strata_last_error();
  });
  other.join();
  CHECK(before.empty());
  CHECK_MESSAGE(after.find("]: strata_test: other thread") != std::string::npos, after);
  CHECK_MESSAGE(last_error_is("strata_test: main thread"), strata_last_error());
}

TEST_CASE("status names and the version") {
  CHECK(std::string(strata_status_name(STRATA_OK)) == "STRATA_OK");
  CHECK(std::string(strata_status_name(STRATA_ERR_BACKEND)) == "STRATA_ERR_BACKEND");
  CHECK(std::string(strata_status_name(STRATA_ERR_CORRUPTED)) == "STRATA_ERR_CORRUPTED");
  CHECK(std::string(strata_status_name(static_cast<strata_status>(-1))) == "STRATA_ERR_UNKNOWN");
  int major = -1, minor = -1, patch = -1;
  strata_version(&major, &minor, &patch);
  CHECK(std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch) ==
        std::string(strata_version_string()));
  CHECK(std::string(strata_version_string()) == strata::version);
}

TEST_CASE("handle functions reject NULL without MPI") {
  int value = 0;
  CHECK(strata_comm_rank(nullptr, &value) == STRATA_ERR_INVALID_ARGUMENT);
  const std::string message = strata_last_error();
  CHECK_MESSAGE(message.rfind("strata [", 0) == 0, message);
  CHECK_MESSAGE(message.find("]: strata_comm_rank: comm is NULL") != std::string::npos, message);
  strata_comm* none = nullptr;
  CHECK(strata_comm_free(&none) == STRATA_OK);
  CHECK(strata_comm_free(nullptr) == STRATA_OK);
  // MPI is not initialised in this process: creation refuses, *out = NULL.
  strata_comm* out = reinterpret_cast<strata_comm*>(&value);
  CHECK(strata_comm_create(MPI_COMM_WORLD, nullptr, &out) == STRATA_ERR_INVALID_ARGUMENT);
  CHECK(out == nullptr);
  CHECK(std::string(strata_last_error()).find("MPI_Init") != std::string::npos);
}
