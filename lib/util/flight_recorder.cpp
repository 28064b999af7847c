// The ring: one process-wide array of records, claimed by an atomic
// counter. See flight_recorder.hpp.
#include "util/flight_recorder.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>

#include "strata/errors.hpp"
#include "util/where.hpp"

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace strata::util::flight {
namespace {

// Written once by start() (under its once_flag), read by every call after:
// a Communicator exists only after start() returned, so every call sees
// them set (the constructor's own synchronisation orders it).
Record* g_records = nullptr;
std::size_t g_capacity = 0;
std::size_t g_mask = 0;  // capacity - 1 when a power of two, else 0 (a division then)
std::atomic<std::uint64_t> g_claimed{0};
Calibration g_calibration;
std::once_flag g_started;

// The call this thread is in, for mark_checked(): the call check runs deep
// inside the executor, which knows nothing of the record.
// initial-exec: a direct thread-pointer access, not a call to
// __tls_get_addr, on the call path (libstrata is loaded with the program
// or preloaded, never dlopen'ed late into a process short of TLS space).
[[gnu::tls_model("initial-exec")]] thread_local Entry t_current;

std::int64_t steady_ns() noexcept {
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);  // what std::chrono::steady_clock reads, and async-signal-safe
  return static_cast<std::int64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
}

std::size_t records_wanted() {
  const char* env = std::getenv("STRATA_FLIGHT_RECORDS");
  if (!env || !*env) return kDefaultRecords;
  std::size_t value = 0;
  const char* end = env + std::strlen(env);
  const auto [last, error] = std::from_chars(env, end, value);
  if (error != std::errc{} || last != end || value < 1 || value > kMaxRecords)
    throw InvalidArgument(util::located(fmt::format(
        "STRATA_FLIGHT_RECORDS = '{}' must be a whole number of records from 1 to {} (the flight recorder's "
        "ring; unset: {})",
        env, kMaxRecords, kDefaultRecords)));
  return value;
}

Record& slot_of(std::uint64_t claim) noexcept {
  const std::size_t index = g_mask ? (claim & g_mask) : (claim % g_capacity);
  return g_records[index];
}

}  // namespace

std::string_view to_string(Form form) {
  switch (form) {
    case Form::blocking: return "blocking";
    case Form::request: return "request";
    case Form::persistent: return "persistent";
    case Form::batch: return "batch";
    case Form::stream_ordered: return "stream_ordered";
  }
  return "?";
}

std::string_view to_string(State state) {
  switch (state) {
    case State::started: return "started";
    case State::checked: return "checked";
    case State::completed: return "completed";
    case State::failed: return "failed";
  }
  return "?";
}

void start() {
  // Read before the once_flag: a bad value throws on every Communicator
  // construction, not only the first.
  const std::size_t capacity = records_wanted();
  std::call_once(g_started, [capacity] {
    g_records = new Record[capacity];  // for the process's life: a fatal signal may read it at any time
    g_capacity = capacity;
    g_mask = (capacity & (capacity - 1)) == 0 ? capacity - 1 : 0;
    g_calibration = {now_ticks(), steady_ns()};
  });
}

std::uint64_t now_ticks() noexcept {
#if defined(__x86_64__)
  return __rdtsc();  // a few ns; clock_gettime costs several times that (docs/PERFORMANCE.md)
#else
  return static_cast<std::uint64_t>(steady_ns());
#endif
}

Calibration calibration() noexcept { return g_calibration; }

Entry begin(const CallFacts& facts) noexcept {
  if (!g_records) [[unlikely]]
    return {};
  const std::uint64_t claim = g_claimed.fetch_add(1, std::memory_order_relaxed) + 1;
  Record& record = slot_of(claim);
  record.claim.store(0, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);  // readers see 0 before the new fields
  record.facts = facts;
  record.state.store(State::started, std::memory_order_relaxed);
  record.started = now_ticks();
  record.ended = 0;
  record.plan[0] = '\0';
  record.claim.store(claim, std::memory_order_release);
  t_current = {&record, claim};
  return t_current;
}

void mark_checked() noexcept {
  const Entry entry = t_current;
  if (!entry.record || entry.record->claim.load(std::memory_order_relaxed) != entry.claim) return;
  if (entry.record->state.load(std::memory_order_relaxed) != State::started) return;
  entry.record->state.store(State::checked, std::memory_order_release);
}

void end(const Entry& entry, State state, std::string_view plan) noexcept {
  if (t_current.record == entry.record) t_current = {};
  if (!entry.record || entry.record->claim.load(std::memory_order_relaxed) != entry.claim) return;
  Record& record = *entry.record;
  record.ended = now_ticks();
  const std::size_t length = std::min(plan.size(), kPlanChars - 1);
  std::memcpy(record.plan, plan.data(), length);
  record.plan[length] = '\0';
  record.state.store(state, std::memory_order_release);
}

View view() noexcept { return {g_records, g_capacity, g_claimed.load(std::memory_order_acquire)}; }

}  // namespace strata::util::flight
