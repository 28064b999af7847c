// strata::Request over the request queue's state (api/request_queue.hpp).
#include "strata/request.hpp"

#include <fmt/format.h>

#include <utility>

#include "api/request_queue.hpp"
#include "strata/errors.hpp"
#include "util/log.hpp"
#include "util/where.hpp"

namespace strata {

using api::RequestState;
using Phase = RequestState::Phase;

Request::Request(std::shared_ptr<api::RequestState> state) : state_(std::move(state)) {}

Request::~Request() { complete_quietly(); }

Request& Request::operator=(Request&& other) noexcept {
  if (this != &other) {
    complete_quietly();
    state_ = std::move(other.state_);
  }
  return *this;
}

void Request::complete_quietly() noexcept {
  if (!active()) return;
  try {
    wait();
  } catch (const std::exception& e) {
    util::log(util::LogLevel::warn, "a request destroyed before it was waited for failed: {}", e.what());
  } catch (...) {
    util::log(util::LogLevel::warn, "a request destroyed before it was waited for failed");
  }
}

bool Request::active() const {
  if (!state_) return false;
  api::RequestQueue* queue = state_->link->queue;
  const Phase phase = queue ? queue->phase(*state_) : state_->phase;
  return phase != Phase::inactive;
}

bool Request::persistent() const { return state_ && state_->persistent; }

bool Request::test() {
  if (!state_) return true;
  // Runs on this thread what the progress thread does not take (without
  // one: every request up to this one, request.hpp); false while it does.
  if (api::RequestQueue* queue = state_->link->queue; queue && !queue->progress(*state_)) return false;
  std::exception_ptr landing_error;
  try {
    if (!state_->landed(false)) return false;  // its GPU work is still under way
  } catch (...) {
    landing_error = std::current_exception();
  }
  finish(landing_error);
  return true;
}

void Request::wait() {
  if (!state_) return;
  if (api::RequestQueue* queue = state_->link->queue) queue->complete(*state_);
  std::exception_ptr landing_error;
  try {
    state_->landed(true);
  } catch (...) {
    landing_error = std::current_exception();
  }
  finish(landing_error);
}

void Request::finish(std::exception_ptr landing_error) {
  api::RequestQueue* queue = state_->link->queue;
  std::exception_ptr error;
  if (queue) {
    error = queue->retire(*state_);
  } else {  // the communicator is gone: it completed every run before it went
    state_->phase = Phase::inactive;
    error = std::exchange(state_->error, nullptr);
  }
  if (!error) error = landing_error;
  if (!state_->persistent) state_.reset();  // complete: empty from now on
  if (error) std::rethrow_exception(error);
}

void Request::start() {
  if (!state_ || !state_->persistent)
    throw InvalidArgument(util::located("Request::start() needs a persistent request (made by one of the *_init "
                                        "calls); a non-blocking call's request starts when it is made"));
  api::RequestQueue* queue = state_->link->queue;
  if (!queue)
    throw InvalidArgument(util::located("Request::start(): its Communicator no longer exists; make the request "
                                        "again on a live one"));
  if (queue->phase(*state_) != Phase::inactive)
    throw InvalidArgument(util::located("Request::start() on a request that is still running: wait() for it (or "
                                        "test() it until true) before starting it again"));
  state_->on_start();
  queue->start(state_);
}

}  // namespace strata
