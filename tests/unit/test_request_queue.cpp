// api::RequestQueue: started requests run once each, in the order they were
// started, on the caller's thread or on the progress thread where they may
// run there, and a caller polling test() always sees its request complete.
// The requests here are counters, not collectives: the queue's ordering and
// hand-over between threads are what is under test.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include "api/request_queue.hpp"

using strata::api::RequestQueue;
using strata::api::RequestState;

namespace {

using Clock = std::chrono::steady_clock;

// Bounds every polling loop: far longer than any run here takes, so that a
// request left behind fails the test instead of hanging it.
constexpr auto kPatience = std::chrono::seconds(10);

// Records the order of runs over all requests and the thread of each.
struct Journal {
  std::mutex mutex;
  std::vector<int> order;
  std::vector<std::thread::id> threads;
};

struct Recorded : RequestState {
  Recorded(Journal& journal, int id) : journal(journal), id(id) {}
  void run() override {
    std::lock_guard lock(journal.mutex);
    journal.order.push_back(id);
    journal.threads.push_back(std::this_thread::get_id());
  }
  Journal& journal;
  int id;
};

std::shared_ptr<Recorded> make(RequestQueue& queue, Journal& journal, int id, bool thread_may_run) {
  auto state = std::make_shared<Recorded>(journal, id);
  queue.adopt(*state, /*persistent=*/false, thread_may_run);
  return state;
}

// Polls like test() in a loop; false if the request never completed.
bool poll_until_complete(RequestQueue& queue, RequestState& state) {
  const auto deadline = Clock::now() + kPatience;
  while (!queue.progress(state))
    if (Clock::now() > deadline) return false;
  return true;
}

}  // namespace

TEST_CASE("a request the thread takes, queued behind one it does not, completes under test()") {
  // The progress thread sleeps while the head is one it may not run. The
  // caller's test() runs that head itself; the thread must then be woken
  // for the one behind it, which test() leaves to it.
  Journal journal;
  RequestQueue queue;
  queue.start_thread();
  auto small = make(queue, journal, 1, /*thread_may_run=*/false);
  auto large = make(queue, journal, 2, /*thread_may_run=*/true);
  queue.start(small);
  queue.start(large);
  // The stimulus, not a wait for an outcome: the pause lets the thread wake
  // for `large`, find `small` at the head and sleep again, the state the
  // lost wake-up needs (without it the thread may still be waking when the
  // caller runs `small`, and the bug hides). What the test waits for, the
  // request's completion, is polled with a bound (kPatience).
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK(poll_until_complete(queue, *large));
  CHECK(queue.phase(*small) == RequestState::Phase::complete);
  queue.shut_down();
  REQUIRE(journal.order == std::vector<int>{1, 2});
  CHECK(journal.threads[0] == std::this_thread::get_id());
  CHECK(journal.threads[1] != std::this_thread::get_id());
}

TEST_CASE("requests run once each in the order started, whichever thread runs them") {
  for (const bool threaded : {false, true}) {
    CAPTURE(threaded);
    Journal journal;
    RequestQueue queue;
    if (threaded) queue.start_thread();
    std::vector<std::shared_ptr<Recorded>> states;
    for (int id = 0; id < 40; ++id) {
      states.push_back(make(queue, journal, id, /*thread_may_run=*/id % 3 != 0));
      queue.start(states.back());
    }
    // Wait for one in the middle, poll the last, then run a blocking call.
    queue.complete(*states[17]);
    CHECK(queue.phase(*states[17]) == RequestState::Phase::complete);
    CHECK(poll_until_complete(queue, *states.back()));
    bool exclusive_ran = false;
    queue.exclusive([&] { exclusive_ran = true; });
    CHECK(exclusive_ran);
    queue.shut_down();
    std::vector<int> expected;
    for (int id = 0; id < 40; ++id) expected.push_back(id);
    CHECK(journal.order == expected);
    for (auto& state : states) CHECK(queue.retire(*state) == nullptr);
  }
}

TEST_CASE("shut_down runs what was started and never waited for") {
  Journal journal;
  RequestQueue queue;
  queue.start_thread();
  auto a = make(queue, journal, 1, false);
  auto b = make(queue, journal, 2, true);
  auto c = make(queue, journal, 3, false);
  for (auto& state : {a, b, c}) queue.start(state);
  queue.shut_down();
  CHECK(journal.order == std::vector<int>{1, 2, 3});
  for (auto& state : {a, b, c}) CHECK(queue.phase(*state) == RequestState::Phase::complete);
}

TEST_CASE("a run's error stays with its request until retired") {
  struct Failing : RequestState {
    void run() override { throw std::runtime_error("seeded failure"); }
  };
  RequestQueue queue;
  auto state = std::make_shared<Failing>();
  queue.adopt(*state, /*persistent=*/true, /*thread_may_run=*/false);
  queue.start(state);
  queue.complete(*state);
  auto error = queue.retire(*state);
  REQUIRE(error != nullptr);
  CHECK_THROWS_WITH_AS(std::rethrow_exception(error), "seeded failure", std::runtime_error);
  CHECK(queue.phase(*state) == RequestState::Phase::inactive);
  queue.shut_down();
}
