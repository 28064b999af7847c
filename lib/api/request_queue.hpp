// The request queue: a communicator's started requests, run one at a time
// in the order they were started, on the calling thread (inside test(),
// wait() and before a blocking call) or on the communicator's progress
// thread (Config::progress_thread) where it may run them. The one part of
// the Session that knows about threads. Internal header.
#pragma once

#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

namespace strata::api {

class RequestQueue;

// How a request finds its queue: the queue while its communicator lives,
// null after (shared by the queue and every request made over it).
struct QueueLink {
  RequestQueue* queue = nullptr;
};

// One request: the public strata::Request holds it, the queue runs it. The
// started calls derive from it with the call and what it points at, so a
// request is one allocation (lib/api/communicator_requests.cpp).
struct RequestState {
  virtual ~RequestState() = default;
  // Runs the bound call once on the Session, throwing what the blocking
  // call throws.
  virtual void run() = 0;
  // On the starting thread, each time the request is started, before it is
  // queued (a CUDA request records where its producer is now).
  virtual void on_start() {}
  // After a run completed: whether the GPU work it left in flight (a CUDA
  // request's stream-ordered work) landed; `block`: waits until it has.
  // Throws the failure that work was caught in.
  virtual bool landed(bool block) {
    (void)block;
    return true;
  }

  bool persistent = false;
  // The progress thread takes it: it makes no MPI call on the way (or MPI
  // allows calls from any thread: MPI_THREAD_MULTIPLE), and it is large
  // enough to be worth handing over (Session::thread_may_run).
  bool thread_may_run = false;
  // start() runs it on the starting thread when nothing is queued or running
  // (a CUDA request whose run only enqueues its work).
  bool run_at_start = false;

  // Guarded by the queue's mutex.
  enum class Phase { inactive, queued, running, complete };
  Phase phase = Phase::inactive;
  std::exception_ptr error;  // the last run's, until test()/wait() reports it

  std::shared_ptr<QueueLink> link;  // set by RequestQueue::adopt
};

class RequestQueue {
 public:
  RequestQueue() : link_(std::make_shared<QueueLink>(QueueLink{this})) {}
  // shut_down() must have run (the Session does it first thing).
  ~RequestQueue();
  RequestQueue(const RequestQueue&) = delete;
  RequestQueue& operator=(const RequestQueue&) = delete;

  // Starts the progress thread; `thread_may_run` of each request says what it takes.
  void start_thread();
  bool has_thread() const { return threaded_; }

  // Makes `state` (new, inactive) a request over this queue.
  void adopt(RequestState& state, bool persistent, bool thread_may_run);

  // Queues a run of `state` (inactive, made here), and runs it at once on
  // this thread when state.run_at_start and no other request is queued or
  // running; otherwise never runs it here.
  void start(const std::shared_ptr<RequestState>& state);

  // The state's phase and error as of now (under the queue's lock).
  RequestState::Phase phase(const RequestState& state);
  // Takes the completed run's error (null if it succeeded) and makes the
  // state inactive again. Precondition: phase(state) == complete.
  std::exception_ptr retire(RequestState& state);

  // Until `state` is complete: runs queued requests on this thread, in
  // order, after the progress thread's run in progress, and waits for the
  // thread only while it runs `state` itself. Errors stay in the states.
  void complete(RequestState& state);
  // The same without waiting for the progress thread: runs on this thread
  // what it does not take, and returns whether `state` is complete (when
  // not, after yielding the core once, for the thread).
  bool progress(RequestState& state);

  // Runs `work` on this thread once every queued request has run, with no
  // request running meanwhile (a blocking call). Exceptions from `work`
  // propagate.
  template <typename Work>
  void exclusive(Work&& work) {
    if (!threaded_) {  // one thread: no lock needed
      if (!queue_.empty()) drain_here();
      work();
      return;
    }
    auto running = guarded(running_);
    while (run_head(/*as_thread=*/false, running)) {}
    work();
  }

  // Runs or waits for every queued request, stops the progress thread, and
  // detaches every state (their start() then refuses). Never throws.
  void shut_down() noexcept;

 private:
  // Runs the queue's head if there is one (and, for the progress thread,
  // if it may run it); `running` is held. false if it ran nothing.
  bool run_head(bool as_thread, std::unique_lock<std::mutex>& running);
  // A lock on `m` while there is a progress thread; without one the
  // communicator is used by one thread only (its contract) and nothing
  // needs locking: the persistent small call pays for no lock.
  std::unique_lock<std::mutex> guarded(std::mutex& m) {
    return threaded_ ? std::unique_lock(m) : std::unique_lock(m, std::defer_lock);
  }
  std::unique_lock<std::mutex> guarded(std::mutex& m, std::try_to_lock_t) {
    return threaded_ ? std::unique_lock(m, std::try_to_lock) : std::unique_lock(m, std::defer_lock);
  }
  // complete() and progress(): `wait_for_thread` says which.
  bool advance(RequestState& state, bool wait_for_thread);
  void drain_here();
  void thread_loop();

  std::mutex mutex_;                  // the queue, the states' phases, stopping_
  std::condition_variable work_;      // for the progress thread: a request it takes was queued, or stopping
  std::condition_variable done_;      // for waiting callers: a request completed
  std::deque<std::shared_ptr<RequestState>> queue_;
  std::mutex running_;                // held while a request (or a blocking call) runs
  std::thread thread_;
  // Whether a progress thread exists: set before it starts (so the thread
  // sees it) and never cleared, unlike thread_, which its own start assigns
  // only after the thread may already be running.
  bool threaded_ = false;
  bool stopping_ = false;
  std::shared_ptr<QueueLink> link_;
};

}  // namespace strata::api
