#include "api/request_queue.hpp"

#include <utility>

#include "util/log.hpp"
#include "util/thread_role.hpp"

namespace strata::api {
namespace {

// How many times wait() yields the core to a progress thread running its
// request before it sleeps until woken: a few hundred microseconds.
constexpr int kYieldsBeforeSleeping = 200;

}  // namespace

RequestQueue::~RequestQueue() { shut_down(); }

void RequestQueue::start_thread() {
  if (threaded_) return;
  threaded_ = true;  // before the thread exists: it reads it
  thread_ = std::thread([this] { thread_loop(); });
}

void RequestQueue::adopt(RequestState& state, bool persistent, bool thread_may_run) {
  state.persistent = persistent;
  state.thread_may_run = thread_may_run;
  state.link = link_;
}

void RequestQueue::start(const std::shared_ptr<RequestState>& state) {
  bool alone = false;
  {
    auto lock = guarded(mutex_);
    state->phase = RequestState::Phase::queued;
    state->error = nullptr;
    queue_.push_back(state);
    alone = queue_.size() == 1;
  }
  if (state->run_at_start && alone) {
    // Nothing queued before it; nothing running either once running_ is
    // ours (else a run in progress, or the thread that took it, runs it).
    auto running = guarded(running_, std::try_to_lock);
    if (!threaded_ || running.owns_lock()) {
      run_head(/*as_thread=*/false, running);
      return;
    }
  }
  if (threaded_ && state->thread_may_run) work_.notify_one();
}

RequestState::Phase RequestQueue::phase(const RequestState& state) {
  auto lock = guarded(mutex_);
  return state.phase;
}

std::exception_ptr RequestQueue::retire(RequestState& state) {
  auto lock = guarded(mutex_);
  state.phase = RequestState::Phase::inactive;
  return std::exchange(state.error, nullptr);
}

bool RequestQueue::run_head(bool as_thread, std::unique_lock<std::mutex>& running) {
  (void)running;  // held by the caller (with a thread): one run at a time, in queue order
  std::shared_ptr<RequestState> head;
  bool thread_takes_next = false;
  {
    auto lock = guarded(mutex_);
    if (queue_.empty() || (as_thread && !queue_.front()->thread_may_run)) return false;
    head = std::move(queue_.front());
    queue_.pop_front();
    head->phase = RequestState::Phase::running;
    thread_takes_next = !as_thread && !queue_.empty() && queue_.front()->thread_may_run;
  }
  // The progress thread sleeps while the head is one it does not take; a
  // caller that runs that head must wake it for the next one, or a test()
  // loop leaving the next to the thread would wait for ever.
  if (threaded_ && thread_takes_next) work_.notify_one();
  std::exception_ptr error;
  try {
    head->run();
  } catch (...) {
    error = std::current_exception();
  }
  {
    auto lock = guarded(mutex_);
    head->error = error;
    head->phase = RequestState::Phase::complete;
  }
  if (threaded_) done_.notify_all();
  return true;
}

void RequestQueue::drain_here() {
  auto running = guarded(running_);
  while (run_head(/*as_thread=*/false, running)) {}
}

void RequestQueue::complete(RequestState& state) { advance(state, /*wait_for_thread=*/true); }

bool RequestQueue::progress(RequestState& state) { return advance(state, /*wait_for_thread=*/false); }

bool RequestQueue::advance(RequestState& state, bool wait_for_thread) {
  int yields = 0;
  for (;;) {
    {
      auto lock = guarded(mutex_);
      if (state.phase == RequestState::Phase::complete || state.phase == RequestState::Phase::inactive) return true;
      // test() leaves to the progress thread what it runs or will run (this
      // request, or one before it); wait() waits only while the thread runs
      // this very request, and otherwise runs the head itself: handing a
      // request over to the thread and back costs two wake-ups (about 9 us
      // for a small one here), more than running it.
      const bool thread_takes_head = threaded_ && !stopping_ && !queue_.empty() && queue_.front()->thread_may_run;
      if (!wait_for_thread && (state.phase == RequestState::Phase::running || thread_takes_head)) {
        // A caller polling test() in a loop would keep the core from the
        // progress thread where ranks fill the cores: give it up once per
        // poll (an 8 B request polled so took 3 ms, not 10 us).
        if (lock.owns_lock()) lock.unlock();
        std::this_thread::yield();
        return false;
      }
      if (state.phase == RequestState::Phase::running) {
        // The thread runs it: a small one ends within microseconds, sooner
        // than a sleeping caller would be woken (a condition variable's
        // wake-up cost ~8 us here). Yield meanwhile, so that the thread has
        // the core where they share one; sleep only if it takes long.
        if (yields++ < kYieldsBeforeSleeping) {
          lock.unlock();
          std::this_thread::yield();
        } else {
          done_.wait(lock);
        }
        continue;
      }
    }
    auto running = guarded(running_);  // after the run in progress, if any
    run_head(/*as_thread=*/false, running);
  }
}

void RequestQueue::thread_loop() {
  util::mark_progress_thread();
  for (;;) {
    {
      auto lock = guarded(mutex_);
      work_.wait(lock, [&] { return stopping_ || (!queue_.empty() && queue_.front()->thread_may_run); });
      if (stopping_) return;
    }
    auto running = guarded(running_);
    run_head(/*as_thread=*/true, running);
  }
}

void RequestQueue::shut_down() noexcept {
  // Everything started runs: its buffers must not be written after the
  // communicator is gone. Errors cannot be reported from a destructor.
  for (;;) {
    std::shared_ptr<RequestState> last;
    {
      auto lock = guarded(mutex_);
      if (queue_.empty()) break;
      last = queue_.back();
    }
    complete(*last);
  }
  {
    auto lock = guarded(mutex_);
    stopping_ = true;
  }
  work_.notify_all();
  if (thread_.joinable()) thread_.join();
  link_->queue = nullptr;
}

}  // namespace strata::api
