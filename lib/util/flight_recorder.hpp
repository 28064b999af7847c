// The flight recorder: every thread that makes calls keeps its last N
// calls, of every communicator, in a bounded ring of its own, so that a
// timeout, a Mismatch, a fatal signal or a request can write down what
// each rank was doing (util/flight_file.hpp writes every ring of the
// process, merged by time; docs/RELIABILITY.md, "Flight recorder").
// Always on, so the call path pays for it on every call: recording takes
// no lock, no atomic read-modify-write, allocates nothing and does no I/O
// — the thread's own counter claims a slot of its own ring, plain stores
// fill it, and the start and end times are raw clock ticks (the TSC on
// x86-64) that the writer converts to steady-clock nanoseconds. A ring per
// thread rather than one shared: a shared counter's atomic increment cost
// a call as much as a clock read (docs/PERFORMANCE.md). The first ring is
// made at the first Communicator, for its thread; another thread's first
// call makes (or takes over an exited thread's) ring. Internal header.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "strata/types.hpp"

namespace strata::util::flight {

// How a call was made.
enum class Form : std::uint8_t { blocking, request, persistent, batch, stream_ordered };
// Where a call got to: taken its number, passed the call check, returned
// normally (a stream-ordered call: its work enqueued), or raised.
enum class State : std::uint8_t { started, checked, completed, failed };

std::string_view to_string(Form form);
std::string_view to_string(State state);

// What a call is, as recorded. dtype, op and root are -1 where the call
// has none (a batch of mixed dtypes, a broadcast's op, an all-reduce's root).
struct CallFacts {
  std::uint32_t comm = 0;  // the communicator's flight id (the same on every rank of it)
  std::int32_t rank = 0;   // this process's rank in it
  std::int32_t size = 1;
  std::uint64_t sequence = 0;  // the call's number on the communicator
  std::uint64_t count = 0;     // elements (a batch: of all its tensors)
  Collective collective = Collective::all_reduce;
  Form form = Form::blocking;
  std::int8_t dtype = -1;  // DataType
  std::int8_t op = -1;     // ReduceOp
  std::int32_t root = -1;
};

inline constexpr std::size_t kPlanChars = 48;  // the plan's text, cut to fit (with its terminating 0)

// One slot of the ring. `claim` is 0 while the slot is being (re)written
// and the number of the claim that wrote it after; a reader that sees the
// same non-zero claim before and after copying a record has a whole one.
struct Record {
  std::atomic<std::uint64_t> claim{0};
  CallFacts facts;
  std::atomic<State> state{State::started};
  // Ticks (now_ticks); 0: not yet. Two clock reads per call, not three:
  // passing the check is a state with no time of its own (a read of the
  // TSC costs about 8 ns on AMD Zen, docs/PERFORMANCE.md).
  std::uint64_t started = 0, ended = 0;
  char plan[kPlanChars] = {};
};

// A recorded call, for its later steps (empty when nothing is recorded).
struct Entry {
  Record* record = nullptr;
  std::uint64_t claim = 0;
};

// Sets the rings' size, once per process, to STRATA_FLIGHT_RECORDS records
// (default kDefaultRecords), and makes the calling thread's ring. Throws
// InvalidArgument naming the variable when it is not a whole number from 1
// to kMaxRecords. Thread-safe; later calls only make the calling thread's
// ring where it has none.
inline constexpr std::size_t kDefaultRecords = 256;
inline constexpr std::size_t kMaxRecords = 1 << 20;
void start();

// Records the start of a call on this thread (a no-op before start()).
// Never locks or blocks; allocates only at a thread's first call when that
// thread has no ring yet (and records nothing if that allocation fails).
Entry begin(const CallFacts& facts) noexcept;
// The call this thread is in passed the call check (a no-op outside one).
void mark_checked() noexcept;
// The call ended in `state` (completed or failed) with the plan `plan`
// (cut to kPlanChars - 1 characters). A no-op when the ring went all the
// way round since its begin().
void end(const Entry& entry, State state, std::string_view plan) noexcept;

// The raw clock the records hold, and the pair of readings (ticks, steady
// nanoseconds) taken at start() that converts them. Async-signal-safe.
std::uint64_t now_ticks() noexcept;
struct Calibration {
  std::uint64_t ticks = 0;
  std::int64_t steady_ns = 0;
};
Calibration calibration() noexcept;

// One thread's ring as it is, for the writer: `capacity` slots, claims
// numbered from 1, `claimed` the last one handed out.
struct View {
  const Record* records = nullptr;
  std::size_t capacity = 0;
  std::uint64_t claimed = 0;

  // The slot claim `claim` was written to, and the oldest claim the ring still keeps.
  const Record& slot(std::uint64_t claim) const { return records[static_cast<std::size_t>(claim % capacity)]; }
  std::uint64_t first_kept() const { return claimed > capacity ? claimed - capacity + 1 : 1; }
};
// Fills `out` with up to `max` rings (none before start()) and returns how
// many exist in all. Async-signal-safe. Rings are never freed.
std::size_t views(View* out, std::size_t max) noexcept;

}  // namespace strata::util::flight
