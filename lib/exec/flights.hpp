// Stream-ordered work in flight: a CUDA call that returned once its work
// was enqueued (a call given a stream, a CUDA request) leaves a Flight —
// the fence after its GPU work, its deadline and what it was. Flights land
// in order (they share the backend's stream). A watcher thread, started
// with the first flight, looks at them every kWatchInterval: a landed
// flight gives its fence back; a deadline that passed first, or an
// asynchronous NCCL or CUDA error, is a failure that no call is there to
// raise, so the failure handler breaks the communicator (aborting NCCL,
// opening held streams) and keeps the error for the next call and
// Communicator::check(), and every flight still up takes that error (the
// requests waiting on them raise it). Any thread may look too (a request's
// test() or wait(), check()): one look at a time, under a lock.
//
// Where MPI may be called from any thread, the watcher answers the roll
// calls of peers while flights are up, and asks one itself when a deadline
// passes, so a timeout names the ranks that did not arrive; elsewhere only
// a thread of the application may ask, and a failure the watcher finds says
// that it cannot tell. Internal header.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "exec/roll_call.hpp"
#include "gpu/backend.hpp"
#include "plan/job.hpp"
#include "strata/errors.hpp"
#include "util/deadline.hpp"

namespace strata::exec {

struct Flight {
  gpu::Fence done;
  util::Deadline deadline;
  // What the call was, owned (the call's own strings are gone).
  std::string collective;
  std::string algorithm;
  std::uint64_t sequence = 0;
  std::size_t bytes = 0;
  // Guarded by the Flights' lock.
  bool settled = false;
  std::exception_ptr error;  // the failure it was caught in, if it did not land

  plan::CallInfo info() const { return {collective, sequence, bytes, algorithm}; }
};

class Flights {
 public:
  static constexpr std::chrono::microseconds kWatchInterval{200};

  // Breaks the communicator with `error` (what the next call and check()
  // raise; its what() is the reason): called once, by the thread that found
  // the failure, with no lock of the Flights held.
  using FailureHandler = std::function<void(std::exception_ptr error, const std::string& reason)>;
  // A failed flight's DeadlineExceeded, naming the ranks that did not
  // arrive where `roll_call` may ask (null: it cannot).
  using Blame = std::function<DeadlineExceeded(RollCall* roll_call, const Flight& flight)>;

  // `roll_call`: answered and asked by the watcher when `mpi_any_thread`.
  Flights(gpu::Backend& backend, FailureHandler on_failure, Blame blame, RollCall* roll_call, bool mpi_any_thread);
  // Stops the watcher. Flights still up are left to the backend's teardown.
  ~Flights();
  Flights(const Flights&) = delete;
  Flights& operator=(const Flights&) = delete;

  // Registers the work a call just enqueued (`done` from Backend::enqueued).
  std::shared_ptr<Flight> add(gpu::Fence done, const util::Deadline& deadline, const plan::CallInfo& info);

  // One look at every flight (see the header comment). `roll_call`: the one
  // this thread may use to ask (null: it may not call MPI).
  void look(RollCall* roll_call);
  // Whether `flight` settled (after one look): true when it landed; throws
  // the failure it was caught in.
  bool landed(Flight& flight, RollCall* roll_call);
  // Until `flight` settled, looking on this thread (answering roll calls
  // through the thread's idle work); throws its failure.
  void wait(Flight& flight, RollCall* roll_call);

 private:
  void watch();
  // A failure found by this thread: hands it to the handler once, then
  // settles every flight with it.
  void fail(std::exception_ptr error, const std::string& reason);

  gpu::Backend& backend_;
  FailureHandler on_failure_;
  Blame blame_;
  RollCall* roll_call_;
  bool mpi_any_thread_;
  std::mutex looking_;  // one look at a time
  std::mutex mutex_;    // flights_, failed_, stopping_
  std::condition_variable wake_;
  std::deque<std::shared_ptr<Flight>> flights_;  // not settled, in the order enqueued
  std::exception_ptr failed_;                    // once a failure was found
  bool stopping_ = false;
  std::thread watcher_;
};

}  // namespace strata::exec
