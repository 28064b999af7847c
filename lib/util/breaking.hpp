// The rule that a timeout or a backend failure breaks what ran the call
// (a Communicator, a GPU engine): `mark_broken(what)` runs before the
// exception goes on; other errors (bad input, Unavailable) pass untouched.
#pragma once

#include "strata/errors.hpp"

namespace strata::util {

template <typename Work, typename MarkBroken>
void breaking_on_failure(Work&& work, MarkBroken&& mark_broken) {
  try {
    work();
  } catch (const DeadlineExceeded& e) {
    mark_broken(e.what());
    throw;
  } catch (const BackendError& e) {
    mark_broken(e.what());
    throw;
  }
}

}  // namespace strata::util
