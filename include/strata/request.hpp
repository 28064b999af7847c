// strata::Request: a collective that was started and has not been waited
// for yet (the non-blocking calls, Communicator::iall_reduce and friends),
// or a collective bound once and started many times (the persistent calls,
// Communicator::all_reduce_init and friends).
//
// Requests of one communicator complete in the order they were started,
// and every rank must start the same calls in the same order (the call
// check compares them as it compares blocking calls: Mismatch on every rank
// otherwise). A blocking call on the communicator first completes every
// request started before it.
//
// Progress. strata runs a request's collective either on the calling thread,
// inside test() and wait() (and a later blocking call), or, where
// Config::progress_thread allows it, on the communicator's progress thread
// as soon as it is started, while the caller computes. Without a progress
// thread, test() runs the requests started before it and this one, so it
// waits for the other ranks to reach them as wait() does (bounded by the
// call's timeout) and then returns true. docs/REQUESTS.md says which
// requests the progress thread runs and why.
//
// CUDA requests. A request on CUDA tensors orders after its producer as it
// was when the request was started (CommunicationOptions::stream, else the
// legacy default stream of each tensor's device). Its run enqueues its
// work on the GPU — at the start itself when nothing is queued before it,
// or on the progress thread where MPI allows calls from any thread, so that
// the start never waits — and the work then progresses by itself; test() is
// true and wait() returns once it finished on the GPU (the result is in the
// outputs, as MPI's semantics ask). Plans with host stages (psgpu, host
// algorithms on CUDA data) run like host requests. A request cannot be
// captured into a CUDA graph (InvalidArgument from test()/wait()).
//
// Buffers. From the start until test() returned true or wait() returned
// (or threw), the request's buffers belong to strata: do not read its
// outputs or write its inputs. Afterwards nothing strata started writes
// into them. A Request destroyed before it completed is completed first
// (there is no cancel); its error, if any, is logged, since a destructor
// cannot throw.
//
// Errors. test() and wait() throw what the blocking call would have thrown
// (InvalidArgument for this rank's arguments, Mismatch, DeadlineExceeded,
// PeerFailure, BackendError), once; the request is then complete. The
// timeout (CommunicationOptions::timeout_seconds) bounds each run from the
// moment strata starts running it.
//
// Not thread-safe, like Communicator: one thread at a time may use a
// communicator and its requests.
#pragma once

#include <exception>
#include <memory>

namespace strata {

namespace api {
struct RequestState;
}  // namespace api

class Request {
 public:
  // An empty request: test() is true, wait() returns, start() throws.
  Request() = default;
  explicit Request(std::shared_ptr<api::RequestState> state);
  // Completes an unfinished run first (see above). Never throws.
  ~Request();
  Request(const Request&) = delete;
  Request& operator=(const Request&) = delete;
  Request(Request&& other) noexcept = default;
  // Completes this request's unfinished run first, as the destructor does.
  Request& operator=(Request&& other) noexcept;

  // true once the run is complete (then the request is inactive: a
  // non-blocking request becomes empty, a persistent one can start again);
  // throws the run's error instead, once. Runs requests as described above.
  bool test();

  // Returns when the run is complete; throws its error. Returns at once for
  // an empty or inactive request.
  void wait();

  // Persistent requests only: starts another run of the bound call.
  // InvalidArgument if the request is not persistent, still running (wait
  // for it first), or its communicator is gone.
  void start();

  // Whether a run was started and has not been completed by test() or wait().
  bool active() const;
  // Whether it was made by one of the *_init calls.
  bool persistent() const;

 private:
  void complete_quietly() noexcept;
  // After the run completed (and its GPU work landed, or failed with
  // `landing_error`): makes the request inactive (empty unless persistent)
  // and throws the run's error, if any.
  void finish(std::exception_ptr landing_error = nullptr);

  std::shared_ptr<api::RequestState> state_;
};

}  // namespace strata
