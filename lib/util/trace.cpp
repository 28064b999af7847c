#include "util/trace.hpp"

#include <fmt/format.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <limits>
#include <mutex>
#include <vector>

#include "util/check.hpp"
#include "util/error_in_flight.hpp"
#include "util/json.hpp"
#include "util/log.hpp"
#include "util/where.hpp"

namespace strata::util::trace {

namespace detail {
const bool enabled_flag = [] {
  const char* env = std::getenv("STRATA_TRACE");
  return env != nullptr && *env != '\0';
}();
}  // namespace detail

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

namespace {

struct Event {
  std::string_view name;  // static storage (record's contract): no copy per event
  std::int64_t start_ns;
  std::int64_t dur_ns;
  int tid;
  std::string args;
};

// The process's trace: one buffer for every communicator and thread.
struct Buffer {
  std::mutex mutex;
  std::vector<Event> events;
  std::uint64_t dropped = 0;
  bool dirty = false;       // events (or a new clock estimate) since the last write
  bool started = false;     // align_clocks ran once: rank, host and exit hooks are set
  int world_rank = 0;
  int world_size = 1;
  std::string host;
  // The clock estimate against world rank 0: offset added to this rank's
  // clock, half the smallest round trip as its uncertainty. Rank 0 itself
  // and a run that never aligned have offset 0; uncertainty < 0 = unknown.
  std::int64_t offset_ns = 0;
  std::int64_t uncertainty_ns = -1;
  int alignment_samples = 0;
  // A communicator over every world rank agreed that every rank traces:
  // then MPI_Finalize may merge the ranks' traces (merge_at_finalize).
  bool whole_world_traces = false;
};

Buffer& buffer() {
  static Buffer* b = new Buffer;  // never destroyed: the exit hook writes from it
  return *b;
}

int thread_id() {
  static thread_local const int id = static_cast<int>(::syscall(SYS_gettid));
  return id;
}

// "%r" replaced by the rank; without it, `path` on a one-rank job and
// `path.<rank>` otherwise (ranks must not overwrite each other's file).
std::string file_name(std::string_view path, int rank, int size) {
  const std::size_t at = path.find("%r");
  if (at != std::string_view::npos)
    return fmt::format("{}{}{}", path.substr(0, at), rank, path.substr(at + 2));
  return size == 1 ? std::string(path) : fmt::format("{}.{}", path, rank);
}

// This rank's events as comma-separated JSON objects (its two metadata
// events first): the body of a traceEvents list, alone or merged.
std::string render_events(const Buffer& b) {
  std::string out;
  out.reserve(256 + b.events.size() * 160);
  std::string host;
  json_escape_into(host, b.host);
  out += fmt::format(
      "{{\"name\":\"process_name\",\"ph\":\"M\",\"ts\":0,\"pid\":{0},\"tid\":0,\"args\":{{\"name\":\"rank {0} ({1})\"}}}}",
      b.world_rank, host);
  out += fmt::format(",\n{{\"name\":\"process_sort_index\",\"ph\":\"M\",\"ts\":0,\"pid\":{0},\"tid\":0,"
                     "\"args\":{{\"sort_index\":{0}}}}}",
                     b.world_rank);
  for (const Event& e : b.events) {
    out += ",\n{\"name\":\"";
    json_escape_into(out, e.name);
    // Microseconds with nanosecond digits: the format's unit is the us.
    const std::int64_t ts = e.start_ns + b.offset_ns;
    out += fmt::format("\",\"ph\":\"X\",\"ts\":{}.{:03},\"dur\":{}.{:03},\"pid\":{},\"tid\":{},\"args\":{{{}}}}}",
                       ts / 1000, ts % 1000, e.dur_ns / 1000, e.dur_ns % 1000, b.world_rank, e.tid, e.args);
  }
  return out;
}

// What otherData says of this rank: "key":value pairs without braces.
std::string render_rank_data(const Buffer& b) {
  std::string host;
  json_escape_into(host, b.host);
  return fmt::format(
      "\"rank\":{},\"ranks\":{},\"host\":\"{}\",\"clock\":\"steady_clock, aligned to world rank 0\","
      "\"clock_offset_us\":{:.3f},\"clock_uncertainty_us\":{},\"clock_samples\":{},"
      "\"events\":{},\"dropped_events\":{},\"max_events\":{}",
      b.world_rank, b.world_size, host, double(b.offset_ns) / 1000,
      b.uncertainty_ns < 0 ? std::string("null") : fmt::format("{:.3f}", double(b.uncertainty_ns) / 1000),
      b.alignment_samples, b.events.size(), b.dropped, kMaxEvents);
}

std::string render(const Buffer& b) {
  return "{\"traceEvents\":[\n" + render_events(b) + "\n],\"displayTimeUnit\":\"ns\",\"otherData\":{" +
         render_rank_data(b) + "}}\n";
}

// Writes `text` to `path` beside and renamed: a reader (or a crash
// mid-write) never sees half a file. False (and nothing left) on failure.
bool write_whole(const std::string& path, const std::string& text) {
  const std::string temporary = path + ".tmp";
  std::FILE* f = std::fopen(temporary.c_str(), "w");
  bool ok = f != nullptr && std::fwrite(text.data(), 1, text.size(), f) == text.size();
  if (f) ok = std::fclose(f) == 0 && ok;
  if (ok) ok = std::rename(temporary.c_str(), path.c_str()) == 0;
  if (!ok) std::remove(temporary.c_str());
  return ok;
}

// Above this many bytes of rendered events over all ranks, the ranks keep
// their own files instead of rank 0 holding them all at once.
constexpr long long kMaxMergedBytes = 512LL << 20;

// Gathers every rank's `mine` on rank 0 of MPI_COMM_WORLD (empty elsewhere).
// Collective; false when MPI fails or the total exceeds `limit` (then no
// rank gathers anything: the sizes are agreed first).
bool gather_texts(const std::string& mine, long long limit, std::vector<std::string>& all, int rank, int size) {
  const long long length = static_cast<long long>(mine.size());
  std::vector<long long> lengths(static_cast<std::size_t>(size));
  if (MPI_Allgather(&length, 1, MPI_LONG_LONG, lengths.data(), 1, MPI_LONG_LONG, MPI_COMM_WORLD) != MPI_SUCCESS)
    return false;
  long long total = 0;
  for (const long long l : lengths) total += l;
  if (total > limit || total > std::numeric_limits<int>::max()) return false;
  std::vector<int> counts(static_cast<std::size_t>(size)), displacements(static_cast<std::size_t>(size));
  for (int r = 0, at = 0; r < size; ++r) {
    counts[static_cast<std::size_t>(r)] = static_cast<int>(lengths[static_cast<std::size_t>(r)]);
    displacements[static_cast<std::size_t>(r)] = at;
    at += counts[static_cast<std::size_t>(r)];
  }
  std::string joined(rank == 0 ? static_cast<std::size_t>(total) : 0, '\0');
  if (MPI_Gatherv(mine.data(), static_cast<int>(mine.size()), MPI_CHAR, joined.data(), counts.data(),
                  displacements.data(), MPI_CHAR, 0, MPI_COMM_WORLD) != MPI_SUCCESS)
    return false;
  all.clear();
  if (rank == 0)
    for (int r = 0; r < size; ++r)
      all.push_back(joined.substr(static_cast<std::size_t>(displacements[static_cast<std::size_t>(r)]),
                                  static_cast<std::size_t>(counts[static_cast<std::size_t>(r)])));
  return true;
}

// At MPI_Finalize, when STRATA_TRACE names one file (no %r) of a job whose
// every rank traces: rank 0 writes that file with every rank's events
// (one pid per rank) and, once it is there, every rank removes its own
// path.<rank>, written before as the copy that survives a crash. Every
// rank of MPI_COMM_WORLD gets here (MPI_Finalize is collective) and takes
// the same branches: whole_world_traces and the sizes are agreed.
void merge_at_finalize() {
  Buffer& b = buffer();
  const char* path = std::getenv("STRATA_TRACE");
  if (!b.whole_world_traces || b.world_size < 2 || std::string_view(path).find("%r") != std::string_view::npos)
    return;
  std::string events, data;
  {
    std::lock_guard lock(b.mutex);
    events = render_events(b);
    data = render_rank_data(b);
    data.insert(data.begin(), '{');
    data += '}';
  }
  std::vector<std::string> all_events, all_data;
  if (!gather_texts(events, kMaxMergedBytes, all_events, b.world_rank, b.world_size) ||
      !gather_texts(data, kMaxMergedBytes, all_data, b.world_rank, b.world_size)) {
    if (b.world_rank == 0)
      log(LogLevel::warn, "STRATA_TRACE: the ranks' traces were not merged into '{}' (too large, or MPI failed); "
                          "each rank's is in '{}.<rank>'", path, path);
    return;
  }
  int merged = 0;
  if (b.world_rank == 0) {
    std::string text = "{\"traceEvents\":[\n";
    for (std::size_t r = 0; r < all_events.size(); ++r) {
      if (r) text += ",\n";
      text += all_events[r];
    }
    text += fmt::format("\n],\"displayTimeUnit\":\"ns\",\"otherData\":{{\"merged\":true,\"ranks\":{},"
                        "\"clock\":\"steady_clock, each rank aligned to world rank 0\",\"per_rank\":[",
                        b.world_size);
    for (std::size_t r = 0; r < all_data.size(); ++r) {
      if (r) text += ',';
      text += all_data[r];
    }
    text += "]}}\n";
    merged = write_whole(path, text) ? 1 : 0;
    if (!merged) log(LogLevel::warn, "STRATA_TRACE: cannot write the merged trace file '{}'; each rank's is in '{}.<rank>'", path, path);
  }
  if (MPI_Bcast(&merged, 1, MPI_INT, 0, MPI_COMM_WORLD) != MPI_SUCCESS || !merged) return;
  std::remove(file_name(path, b.world_rank, b.world_size).c_str());
}

// MPI_Finalize deletes MPI_COMM_SELF's attributes first: the last write
// while MPI (and the world rank) is still there.
int write_at_finalize(MPI_Comm, int, void*, void*) {
  write_file();
  try {
    merge_at_finalize();
  } catch (...) {
    // Out of memory while merging: each rank's own file stays.
  }
  return MPI_SUCCESS;
}

void arrange_final_writes() {
  std::atexit([] { write_file(); });
  int key = MPI_KEYVAL_INVALID;
  if (MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, write_at_finalize, &key, nullptr) == MPI_SUCCESS)
    MPI_Comm_set_attr(MPI_COMM_SELF, key, nullptr);
}

constexpr int kAlignTag = 0x7ace;
constexpr int kAlignRounds = 16;

}  // namespace

void record(std::string_view name, std::int64_t start_ns, std::int64_t end_ns, std::string args_json) {
  Buffer& b = buffer();
  const int tid = thread_id();
  std::lock_guard lock(b.mutex);
  if (b.events.size() >= kMaxEvents) {
    ++b.dropped;
    return;
  }
  if (b.events.capacity() == 0) b.events.reserve(4096);
  b.events.push_back({name, start_ns, end_ns - start_ns, tid, std::move(args_json)});
  b.dirty = true;
}

void start() {
  if (!enabled()) return;
  Buffer& b = buffer();
  std::lock_guard lock(b.mutex);
  if (b.started) return;
  b.started = true;
  b.world_rank = std::max(0, util::world_rank());
  STRATA_CHECK_MPI(MPI_Comm_size(MPI_COMM_WORLD, &b.world_size));
  b.host = util::hostname();
  arrange_final_writes();
  b.dirty = true;
}

void align_clocks(MPI_Comm comm, int rank, int size) {
  start();
  Buffer& b = buffer();
  if (size == b.world_size) {
    std::lock_guard lock(b.mutex);
    b.whole_world_traces = true;
  }
  // Rank 0 answers each rank's pings in turn with its clock and its world
  // rank; the other ranks keep the sample with the smallest round trip
  // (queueing and descheduling only ever lengthen one).
  if (rank == 0) {
    for (int peer = 1; peer < size; ++peer)
      for (int k = 0; k < kAlignRounds; ++k) {
        std::int64_t ping = 0;
        STRATA_CHECK_MPI(MPI_Recv(&ping, 1, MPI_INT64_T, peer, kAlignTag, comm, MPI_STATUS_IGNORE));
        const std::int64_t pong[2] = {now_ns(), b.world_rank};
        STRATA_CHECK_MPI(MPI_Send(pong, 2, MPI_INT64_T, peer, kAlignTag, comm));
      }
    std::lock_guard lock(b.mutex);
    if (b.world_rank == 0) b.uncertainty_ns = 0;  // the reference itself
    return;
  }
  std::int64_t best_rtt = std::numeric_limits<std::int64_t>::max(), best_offset = 0, reference = -1;
  for (int k = 0; k < kAlignRounds; ++k) {
    const std::int64_t sent = now_ns();
    std::int64_t pong[2] = {0, 0};
    STRATA_CHECK_MPI(MPI_Send(&sent, 1, MPI_INT64_T, 0, kAlignTag, comm));
    STRATA_CHECK_MPI(MPI_Recv(pong, 2, MPI_INT64_T, 0, kAlignTag, comm, MPI_STATUS_IGNORE));
    const std::int64_t received = now_ns();
    if (received - sent < best_rtt) {
      best_rtt = received - sent;
      best_offset = pong[0] - (sent + received) / 2;  // rank 0's clock at our midpoint
    }
    reference = pong[1];
  }
  if (reference != 0) return;  // only an estimate against world rank 0 aligns the file
  std::lock_guard lock(b.mutex);
  if (b.uncertainty_ns >= 0 && b.uncertainty_ns <= best_rtt / 2) return;
  b.offset_ns = best_offset;
  b.uncertainty_ns = best_rtt / 2;
  b.alignment_samples = kAlignRounds;
  b.dirty = true;
}

void write_file() noexcept {
  if (!enabled()) return;
  try {
    Buffer& b = buffer();
    std::lock_guard lock(b.mutex);
    if (!b.started || !b.dirty) return;
    const std::string path = file_name(std::getenv("STRATA_TRACE"), b.world_rank, b.world_size);
    if (!write_whole(path, render(b))) {
      log(LogLevel::warn, "STRATA_TRACE: cannot write the trace file '{}'", path);
      return;
    }
    b.dirty = false;
  } catch (...) {
    // Out of memory while rendering: nothing better to do at exit.
  }
}

void Args::key(std::string_view name) {
  if (json_.empty()) json_.reserve(128);  // one allocation for a call's args (about 110 characters)
  else json_ += ',';
  json_ += '"';
  json_escape_into(json_, name);
  json_ += "\":";
}

Args& Args::add(std::string_view name, std::string_view value) {
  key(name);
  json_ += '"';
  json_escape_into(json_, value);
  json_ += '"';
  return *this;
}

template <typename Number>
Args& Args::add_number(std::string_view name, Number value) {
  key(name);
  fmt::format_to(std::back_inserter(json_), "{}", value);
  return *this;
}

Args& Args::add(std::string_view name, std::int64_t value) { return add_number(name, value); }
Args& Args::add(std::string_view name, std::uint64_t value) { return add_number(name, value); }

Args& Args::add(std::string_view name, std::span<const int> values) {
  key(name);
  json_ += '[';
  for (std::size_t i = 0; i < values.size(); ++i) fmt::format_to(std::back_inserter(json_), "{}{}", i ? "," : "", values[i]);
  json_ += ']';
  return *this;
}

void Span::end() {
  record(name_, start_, now_ns(), std::move(args_).take());
  start_ = 0;
}

std::string_view current_error_name() noexcept { return error_name(error_in_flight().kind); }

std::string current_error_message() { return error_in_flight().message; }

}  // namespace strata::util::trace
