// The trace timeline (STRATA_TRACE=path): spans of strata's calls kept in a
// bounded in-memory buffer and written as a Chrome trace-event JSON file
// (Perfetto, chrome://tracing): a file per MPI_COMM_WORLD rank while the
// job runs, merged into the one file STRATA_TRACE names at MPI_Finalize.
// docs/TRACING.md says what is traced and how the files are named.
//
// Off (STRATA_TRACE unset or empty), a call pays one well-predicted branch
// on a flag read once at load; on, a span costs two clock reads and one
// buffered event, and no file is written on the call path: the file is
// (re)written whole at communicator destruction, after a call that broke its
// communicator (a timeout, a peer failure), at MPI_Finalize and at exit.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace strata::util::trace {

namespace detail {
extern const bool enabled_flag;  // STRATA_TRACE set and not empty, read once at load
}  // namespace detail

// Whether tracing is on for this process.
inline bool enabled() { return detail::enabled_flag; }

// The trace clock: steady_clock, in nanoseconds. Timestamps in the file are
// this clock plus the offset to the reference rank (align_clocks).
std::int64_t now_ns();

// The most events the buffer keeps; later ones are only counted (the count
// is in the file's otherData.dropped_events).
inline constexpr std::size_t kMaxEvents = 1'000'000;

// Waits on peers shorter than this are not traced (they are the common,
// uninteresting case of a peer a few microseconds behind).
inline constexpr std::int64_t kWaitThresholdNs = 20'000;

// Records a complete event [start_ns, end_ns) on the calling thread.
// `name` must be of static storage (a literal, a to_string name): events
// keep it uncopied. `args_json` is the body of the args object
// ("\"k\":v,..." without braces, may be empty). Thread-safe; never writes a
// file.
void record(std::string_view name, std::int64_t start_ns, std::int64_t end_ns, std::string args_json);

// Starts this process's trace (when tracing is on; once, later calls do
// nothing): caches the world rank and host (the file's pid and process
// name) and arranges the final writes at MPI_Finalize and at exit. Called at
// communicator construction; MPI must be initialized.
void start();

// Estimates this rank's clock offset to `comm`'s rank 0 by ping-pongs (the
// sample with the smallest round trip wins) and, when that rank is world
// rank 0 and the round trip is the smallest seen yet, keeps it for the
// file. Collective over `comm`: every rank of it calls it at construction,
// and only when every rank traces. Throws through STRATA_CHECK_MPI.
void align_clocks(MPI_Comm comm, int rank, int size);

// Writes the whole buffer so far to this rank's file (path rules in
// docs/TRACING.md), replacing the previous write: a valid file after every
// call. Never throws; a failure prints one warning. No-op when tracing is
// off or nothing was recorded since the last write. (The merge into one
// file happens at MPI_Finalize only, where every rank takes part.)
void write_file() noexcept;

// Appends `"key":value,` pairs to a span's args (JSON-escaped).
class Args {
 public:
  Args& add(std::string_view name, std::string_view value);
  Args& add(std::string_view name, const char* value) { return add(name, std::string_view(value)); }
  Args& add(std::string_view name, std::int64_t value);
  Args& add(std::string_view name, std::uint64_t value);
  Args& add(std::string_view name, int value) { return add(name, std::int64_t(value)); }
  Args& add(std::string_view name, std::span<const int> values);
  const std::string& json() const { return json_; }
  std::string take() && { return std::move(json_); }

 private:
  void key(std::string_view name);  // appends `"name":` (and the comma before it)
  template <typename Number>
  Args& add_number(std::string_view name, Number value);
  std::string json_;
};

// One span over a scope. When tracing is off it costs one branch and holds
// nothing; `args()` may then only be used behind `active()`.
class Span {
 public:
  // `name` must be of static storage (see record).
  explicit Span(std::string_view name) : name_(name), start_(enabled() ? now_ns() : 0) {}
  ~Span() {
    if (start_ != 0) [[unlikely]] end();
  }
  Span(const Span&) = delete;
  Span& operator=(const Span&) = delete;

  bool active() const { return start_ != 0; }
  Args& args() { return args_; }
  // Records the span now (the destructor then does nothing).
  void end();

 private:
  std::string_view name_;
  std::int64_t start_;
  Args args_;
};

// The name of the error in flight, for a span's outcome: call only inside a
// catch block ("DeadlineExceeded", "PeerFailure", ..., "std::exception",
// "unknown").
std::string_view current_error_name() noexcept;
// The what() of the error in flight (empty when it is no std::exception);
// only inside a catch block.
std::string current_error_message();

}  // namespace strata::util::trace
