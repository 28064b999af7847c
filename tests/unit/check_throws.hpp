// Shared by the unit and MPI tests: run a callable that must throw a given
// strata error, and check that the message contains every expected fragment
// (the field name and the offending value, per DESIGN.md's "messages name
// the field and value").
#pragma once

#include <doctest/doctest.h>

#include <initializer_list>
#include <string>
#include <string_view>

namespace strata::test {

// Returns whether `fn` threw an Error (what the checks above asserted on
// this rank), so that a caller can compare it across ranks.
template <typename Error, typename Fn>
bool check_throws_naming(Fn&& fn, std::initializer_list<std::string_view> fragments) {
  std::string message;
  bool thrown = false;
  try {
    fn();
  } catch (const Error& e) {
    thrown = true;
    message = e.what();
  } catch (const std::exception& e) {
    FAIL_CHECK("threw the wrong exception type: " << e.what());
    return false;
  }
  CHECK_MESSAGE(thrown, "expected an exception naming " << *fragments.begin());
  for (std::string_view fragment : fragments)
    CHECK_MESSAGE(message.find(fragment) != std::string::npos,
                  "message '" << message << "' should contain '" << std::string(fragment) << "'");
  return thrown;
}

}  // namespace strata::test
