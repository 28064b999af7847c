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
#include <new>

#include "strata/errors.hpp"
#include "util/where.hpp"

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

namespace strata::util::flight {
namespace {

// A thread's ring. `claimed` is written by its thread alone (a plain
// increment) and read by writers; `taken` says a live thread owns it.
struct Ring {
  Record* records = nullptr;
  std::atomic<std::uint64_t> claimed{0};
  std::atomic<bool> taken{true};
  Ring* next = nullptr;  // (the list only grows: set before the ring is published)
};

// Written once by start() (under its once_flag), read by every call after:
// a Communicator exists only after start() returned, so every call sees
// them set (the constructor's own synchronisation orders it).
std::size_t g_capacity = 0;
std::size_t g_mask = 0;  // capacity - 1 when a power of two, else 0 (a division then)
Calibration g_calibration;
std::once_flag g_started;
std::atomic<Ring*> g_rings{nullptr};  // every ring ever made, newest first

// initial-exec: a direct thread-pointer access, not a call to
// __tls_get_addr, on the call path (libstrata is loaded with the program
// or with the module that needs it; two pointers fit glibc's reserve for
// a library opened later).
[[gnu::tls_model("initial-exec")]] thread_local Ring* t_ring = nullptr;
// The call this thread is in, for mark_checked(): the call check runs deep
// inside the executor, which knows nothing of the record.
[[gnu::tls_model("initial-exec")]] thread_local Entry t_current;

// Hands the thread's ring back when the thread ends, for the next thread
// that needs one (its records stay until they are written over).
struct RingReturn {
  Ring* ring = nullptr;
  ~RingReturn() {
    if (ring) ring->taken.store(false, std::memory_order_release);
  }
};

// The calling thread's ring: an exited thread's, else a new one (null
// when it cannot be allocated).
Ring* acquire_ring() noexcept {
  Ring* ring = nullptr;
  for (Ring* r = g_rings.load(std::memory_order_acquire); r && !ring; r = r->next) {
    bool free = false;
    if (!r->taken.load(std::memory_order_relaxed) && r->taken.compare_exchange_strong(free, true)) ring = r;
  }
  if (!ring) {
    ring = new (std::nothrow) Ring;
    Record* records = ring ? new (std::nothrow) Record[g_capacity] : nullptr;
    if (!records) {
      delete ring;
      return nullptr;
    }
    ring->records = records;
    ring->next = g_rings.load(std::memory_order_relaxed);
    while (!g_rings.compare_exchange_weak(ring->next, ring, std::memory_order_release, std::memory_order_relaxed)) {
    }
  }
  static thread_local RingReturn give_back;  // (constructed here, on the slow path only)
  give_back.ring = ring;
  t_ring = ring;
  return ring;
}

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

Record& slot_of(Ring& ring, std::uint64_t claim) noexcept {
  const std::size_t index = g_mask ? (claim & g_mask) : (claim % g_capacity);
  return ring.records[index];
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
    g_capacity = capacity;
    g_mask = (capacity & (capacity - 1)) == 0 ? capacity - 1 : 0;
    g_calibration = {now_ticks(), steady_ns()};
  });
  // The Communicator's thread, which will make calls, gets its ring here
  // rather than at its first call. (Rings live for the process: a fatal
  // signal may read them at any time.)
  if (!t_ring) acquire_ring();
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
  Ring* ring = t_ring;
  if (!ring) [[unlikely]] {
    if (g_capacity == 0 || !(ring = acquire_ring())) return {};
  }
  // Only this thread writes `claimed`: a load and a store, no locked
  // increment; a writer that reads the new count before the record is
  // whole skips it by its claim.
  const std::uint64_t claim = ring->claimed.load(std::memory_order_relaxed) + 1;
  ring->claimed.store(claim, std::memory_order_relaxed);
  Record& record = slot_of(*ring, claim);
  record.claim.store(0, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);  // readers see 0 before the new fields
  record.facts = facts;
  record.state.store(State::started, std::memory_order_relaxed);
  record.started = now_ticks();
  record.ended = 0;
  record.plan[0] = '\0';
  record.claim.store(claim, std::memory_order_release);
  const Entry entry{&record, claim};
  t_current = entry;
  return entry;
}

void mark_checked() noexcept {
  const Entry entry = t_current;
  if (!entry.record || entry.record->claim.load(std::memory_order_relaxed) != entry.claim) return;
  if (entry.record->state.load(std::memory_order_relaxed) != State::started) return;
  entry.record->state.store(State::checked, std::memory_order_release);
}

// (t_current is left as it is: mark_checked() does nothing to a record
// that ended or was written over, and the thread's next begin() replaces it.)
void end(const Entry& entry, State state, std::string_view plan) noexcept {
  if (!entry.record || entry.record->claim.load(std::memory_order_relaxed) != entry.claim) return;
  Record& record = *entry.record;
  record.ended = now_ticks();
  const std::size_t length = std::min(plan.size(), kPlanChars - 1);
  std::memcpy(record.plan, plan.data(), length);
  record.plan[length] = '\0';
  record.state.store(state, std::memory_order_release);
}

std::size_t views(View* out, std::size_t max) noexcept {
  std::size_t n = 0;
  for (const Ring* r = g_rings.load(std::memory_order_acquire); r; r = r->next, ++n)
    if (n < max) out[n] = {r->records, g_capacity, r->claimed.load(std::memory_order_acquire)};
  return n;
}

}  // namespace strata::util::flight
