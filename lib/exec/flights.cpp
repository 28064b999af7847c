#include "exec/flights.hpp"

#include <fmt/format.h>

#include "gpu/plugin.hpp"
#include "strata/errors.hpp"
#include "util/where.hpp"

namespace strata::exec {

Flights::Flights(gpu::Backend& backend, FailureHandler on_failure, Blame blame, RollCall* roll_call,
                 bool mpi_any_thread)
    : backend_(backend),
      on_failure_(std::move(on_failure)),
      blame_(std::move(blame)),
      roll_call_(roll_call),
      mpi_any_thread_(mpi_any_thread) {}

Flights::~Flights() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (watcher_.joinable()) watcher_.join();
}

std::shared_ptr<Flight> Flights::add(gpu::Fence done, const util::Deadline& deadline, const plan::CallInfo& info) {
  auto flight = std::make_shared<Flight>();
  flight->done = done;
  flight->deadline = deadline;
  flight->collective = info.collective;
  flight->algorithm = info.algorithm;
  flight->sequence = info.sequence;
  flight->bytes = info.bytes;
  {
    std::lock_guard lock(mutex_);
    if (failed_) {  // (the communicator broke since this call checked: it settles at once)
      flight->settled = true;
      flight->error = failed_;
      return flight;
    }
    flights_.push_back(flight);
    if (!watcher_.joinable()) watcher_ = std::thread([this] { watch(); });
  }
  wake_.notify_all();
  return flight;
}

void Flights::look(RollCall* roll_call) {
  std::lock_guard looking(looking_);
  std::exception_ptr failure;
  std::string reason;
  bool all_landed = false;
  try {
    for (;;) {  // they land in order: stop at the first that has not
      std::shared_ptr<Flight> head;
      {
        std::lock_guard lock(mutex_);
        if (failed_) return;
        if (flights_.empty()) {
          all_landed = true;
          break;
        }
        head = flights_.front();
      }
      if (!backend_.passed(head->done)) break;
      backend_.release(head->done);
      std::lock_guard lock(mutex_);
      head->settled = true;
      flights_.pop_front();
    }
    if (const std::string error = backend_.async_error(); !error.empty())
      throw BackendError(fmt::format("strata [{}]: stream-ordered work of this communicator failed after its call "
                                     "returned: {}. The NCCL communicators were aborted and this communicator "
                                     "refuses further calls",
                                     util::where(), error),
                         "NCCL", 0, util::hostname(), util::world_rank());
    std::shared_ptr<Flight> late;
    {
      std::lock_guard lock(mutex_);
      for (const auto& flight : flights_)
        if (flight->deadline.expired()) {
          late = flight;
          break;
        }
    }
    if (late) throw blame_(roll_call, *late);
  } catch (const Error& e) {
    failure = std::current_exception();
    reason = e.what();
  }
  if (failure) fail(failure, reason);
  else if (all_landed) backend_.reclaim();
}

void Flights::fail(std::exception_ptr error, const std::string& reason) {
  {
    std::lock_guard lock(mutex_);
    if (failed_) return;
    failed_ = error;
  }
  on_failure_(error, reason);
  std::lock_guard lock(mutex_);
  for (const auto& flight : flights_) {
    flight->settled = true;
    flight->error = error;
  }
  flights_.clear();  // (their fences may never pass: they stay with the broken backend)
}

bool Flights::landed(Flight& flight, RollCall* roll_call) {
  look(roll_call);
  std::lock_guard lock(mutex_);
  if (!flight.settled) return false;
  if (flight.error) std::rethrow_exception(flight.error);
  return true;
}

void Flights::wait(Flight& flight, RollCall* roll_call) {
  util::Backoff backoff(util::Backoff::Patience::device);
  while (!landed(flight, roll_call)) backoff.pause();
}

void Flights::watch() {
  gpu::relax_capture_checks();  // its queries must never break a graph the application captures
  RollCall* mine = mpi_any_thread_ ? roll_call_ : nullptr;
  std::unique_lock lock(mutex_);
  for (;;) {
    wake_.wait(lock, [&] { return stopping_ || (!flights_.empty() && !failed_); });
    if (stopping_) return;
    lock.unlock();
    look(mine);
    if (mine) mine->run();  // peers that timed out ask where this rank is
    lock.lock();
    wake_.wait_for(lock, kWatchInterval, [&] { return stopping_; });
  }
}

}  // namespace strata::exec
