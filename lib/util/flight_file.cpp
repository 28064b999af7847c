// The flight recorder's writer. Everything it calls after configure_file
// is async-signal-safe (open, write, close, rename, clock_gettime), so the
// fatal-signal handler uses the same code as a timeout; it formats by
// hand into a stack buffer for that reason.
#include "util/flight_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <mutex>

#include "util/flight_recorder.hpp"

namespace strata::util::flight {
namespace {

constexpr std::size_t kPathChars = 4096;
char g_path[kPathChars] = {};
char g_temporary[kPathChars] = {};
// A second temporary, for a writer that starts while another is writing
// (SIGUSR1 or a fatal signal arriving during a timeout's write, on the
// same thread or another): each writes a whole file of its own and the
// last rename wins, instead of both truncating one file under each other.
char g_temporary_nested[kPathChars] = {};
std::atomic<int> g_writers{0};
char g_host[256] = {};
int g_world_rank = 0, g_world_size = 1;
long g_pid = 0;
bool g_enabled = false;
std::once_flag g_configured;

// A stack buffer of text that goes to `fd` whenever it fills.
class Out {
 public:
  explicit Out(int fd) : fd_(fd) {}
  ~Out() { flush(); }
  Out(const Out&) = delete;
  Out& operator=(const Out&) = delete;

  Out& text(std::string_view s) {
    for (const char c : s) put(c);
    return *this;
  }
  // One line's worth: newlines and tabs become spaces.
  Out& line_text(std::string_view s) {
    for (const char c : s) put(c == '\n' || c == '\r' || c == '\t' ? ' ' : c);
    return *this;
  }
  Out& number(std::uint64_t n) {
    char digits[24];
    int i = 0;
    do digits[i++] = static_cast<char>('0' + n % 10);
    while ((n /= 10) != 0);
    while (i > 0) put(digits[--i]);
    return *this;
  }
  Out& signed_number(std::int64_t n) {
    if (n < 0) {
      put('-');
      return number(static_cast<std::uint64_t>(-(n + 1)) + 1);
    }
    return number(static_cast<std::uint64_t>(n));
  }
  Out& field(std::string_view key, std::string_view value) { return text(" ").text(key).text("=").text(value); }
  Out& field(std::string_view key, std::uint64_t value) { return text(" ").text(key).text("=").number(value); }
  Out& signed_field(std::string_view key, std::int64_t value) {
    return text(" ").text(key).text("=").signed_number(value);
  }
  bool ok() const { return ok_; }
  bool flush() {
    std::size_t done = 0;
    while (done < used_) {
      const ssize_t n = ::write(fd_, buffer_ + done, used_ - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        ok_ = false;
        break;
      }
      done += static_cast<std::size_t>(n);
    }
    used_ = 0;
    return ok_;
  }

 private:
  void put(char c) {
    if (used_ == sizeof(buffer_)) flush();
    buffer_[used_++] = c;
  }
  int fd_;
  char buffer_[4096];
  std::size_t used_ = 0;
  bool ok_ = true;
};

std::int64_t clock_ns(clockid_t clock) {
  timespec now{};
  clock_gettime(clock, &now);
  return static_cast<std::int64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
}

// Converts the records' ticks to steady-clock nanoseconds: the ticks' rate
// over the time since start() (on x86-64 the TSC's, which is constant).
class TickScale {
 public:
  TickScale() : base_(calibration()) {
    const std::uint64_t ticks = now_ticks();
    const std::int64_t ns = clock_ns(CLOCK_MONOTONIC);
    if (ticks > base_.ticks && ns > base_.steady_ns)
      ns_per_tick_ = static_cast<double>(ns - base_.steady_ns) / static_cast<double>(ticks - base_.ticks);
  }
  std::int64_t ns(std::uint64_t ticks) const {
    if (ticks == 0) return 0;  // not reached
    const double since = (static_cast<double>(ticks) - static_cast<double>(base_.ticks)) * ns_per_tick_;
    return base_.steady_ns + static_cast<std::int64_t>(since);
  }

 private:
  Calibration base_;
  double ns_per_tick_ = 1.0;
};

// A record copied out of the ring while no writer touched it.
struct Copied {
  CallFacts facts;
  State state = State::started;
  std::uint64_t started = 0, ended = 0;
  char plan[kPlanChars] = {};
};

bool copy_record(const Record& record, std::uint64_t claim, Copied& out) {
  if (record.claim.load(std::memory_order_acquire) != claim) return false;
  out.facts = record.facts;
  out.state = record.state.load(std::memory_order_acquire);
  out.started = record.started;
  out.ended = record.ended;
  std::memcpy(out.plan, record.plan, kPlanChars);
  out.plan[kPlanChars - 1] = '\0';
  std::atomic_thread_fence(std::memory_order_acquire);
  return record.claim.load(std::memory_order_relaxed) == claim;  // not rewritten meanwhile
}

std::string_view collective_name(const CallFacts& facts) {
  if (facts.form != Form::batch) return to_string(facts.collective);
  switch (facts.collective) {
    case Collective::reduce: return "batch_reduce";
    case Collective::broadcast: return "batch_broadcast";
    default: return "batch_all_reduce";
  }
}

void write_call(Out& out, const Copied& call, const TickScale& scale) {
  const CallFacts& f = call.facts;
  out.text("call").field("comm", f.comm).signed_field("rank", f.rank).signed_field("size", f.size);
  out.field("seq", f.sequence).field("collective", collective_name(f)).field("count", f.count);
  out.field("dtype", f.dtype < 0 ? std::string_view("-") : to_string(static_cast<DataType>(f.dtype)));
  out.field("op", f.op < 0 ? std::string_view("-") : to_string(static_cast<ReduceOp>(f.op)));
  out.signed_field("root", f.root).field("form", to_string(f.form)).field("state", to_string(call.state));
  out.signed_field("started_ns", scale.ns(call.started)).signed_field("ended_ns", scale.ns(call.ended));
  out.text(" plan=").line_text(call.plan[0] ? std::string_view(call.plan) : std::string_view("-")).text("\n");
}

// The most rings written (one per thread that made calls, an exited
// thread's taken over by the next): the header's rings= says how many
// there are when a process has more.
constexpr std::size_t kMergedRings = 64;

// Every ring's records, oldest first across the rings (by their start
// ticks; each ring is in order already).
void write_records(Out& out, const View* rings, std::size_t count, const TickScale& scale) {
  std::uint64_t next[kMergedRings];
  const std::size_t merged = count < kMergedRings ? count : kMergedRings;
  for (std::size_t r = 0; r < merged; ++r) next[r] = rings[r].first_kept();
  for (;;) {
    std::size_t oldest = merged;
    for (std::size_t r = 0; r < merged; ++r)
      if (next[r] <= rings[r].claimed &&
          (oldest == merged || rings[r].slot(next[r]).started < rings[oldest].slot(next[oldest]).started))
        oldest = r;  // (a racy peek: it only orders; copy_record checks the record)
    if (oldest == merged) break;
    Copied call;
    if (copy_record(rings[oldest].slot(next[oldest]), next[oldest], call)) write_call(out, call, scale);
    ++next[oldest];
  }
}

// write_file() through `temporary`.
bool write_through(const char* temporary, std::string_view reason, std::string_view detail) noexcept {
  const int fd = ::open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  View rings[kMergedRings];
  const std::size_t ring_count = views(rings, kMergedRings);
  const std::size_t listed = ring_count < kMergedRings ? ring_count : kMergedRings;
  std::uint64_t calls = 0;
  for (std::size_t r = 0; r < listed; ++r) calls += rings[r].claimed;
  bool ok = false;
  {
    Out out(fd);
    const TickScale scale;
    out.text("# strata flight record: one line per call, oldest first (docs/RELIABILITY.md, \"Flight recorder\")\n");
    out.text("process").field("host", g_host).signed_field("pid", g_pid).signed_field("world_rank", g_world_rank);
    out.signed_field("world_size", g_world_size).field("records", listed ? rings[0].capacity : 0).field("calls", calls);
    out.field("rings", ring_count);
    out.signed_field("steady_ns", clock_ns(CLOCK_MONOTONIC)).signed_field("realtime_ns", clock_ns(CLOCK_REALTIME));
    out.text(" reason=").line_text(reason).text("\n");
    if (!detail.empty()) out.text("detail ").line_text(detail).text("\n");
    write_records(out, rings, listed, scale);
    ok = out.flush();
  }
  const int saved = errno;
  ::close(fd);
  if (!ok) {
    errno = saved;
    return false;
  }
  return ::rename(temporary, g_path) == 0;
}

}  // namespace

void configure_file(int world_rank, int world_size) {
  std::call_once(g_configured, [&] {
    g_world_rank = world_rank;
    g_world_size = world_size;
    g_pid = static_cast<long>(::getpid());
    if (::gethostname(g_host, sizeof(g_host) - 1) != 0) std::strcpy(g_host, "unknown");
    const char* dir = std::getenv("STRATA_FLIGHT_DIR");
    if (!dir || !*dir) return;
    ::mkdir(dir, 0755);  // (exists already, usually; a failure shows when a file is written)
    const int n = std::snprintf(g_path, kPathChars, "%s/flight-%s-%ld-rank%d.txt", dir, g_host, g_pid, world_rank);
    if (n <= 0 || static_cast<std::size_t>(n) + 5 >= kPathChars) return;  // (too long a folder: stays off)
    std::snprintf(g_temporary, kPathChars, "%s.tmp", g_path);
    std::snprintf(g_temporary_nested, kPathChars, "%s.nested.tmp", g_path);
    g_enabled = true;
  });
}

bool file_enabled() noexcept { return g_enabled; }

const char* file_path() noexcept { return g_enabled ? g_path : ""; }

bool write_file(std::string_view reason, std::string_view detail) noexcept {
  if (!g_enabled) {
    errno = ENOENT;
    return false;
  }
  // (A third writer at once shares the nested name: rare enough to leave.)
  const bool nested = g_writers.fetch_add(1) > 0;
  const bool ok = write_through(nested ? g_temporary_nested : g_temporary, reason, detail);
  g_writers.fetch_sub(1);
  return ok;
}

}  // namespace strata::util::flight
