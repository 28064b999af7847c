#include "threads.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>

#include "report.hpp"
#include "settings.hpp"

namespace gpu_double::nccl {
namespace {

struct Occupant {
  pid_t thread = 0;  // 0: nobody
  int depth = 0;     // nested calls of that thread (a call made inside another one)
  std::string call;  // what it is inside, for messages
};

struct Table {
  std::mutex mutex;
  std::map<int, Occupant> by_device;
  // When each thread last entered a call for each device (a clock, not a
  // time): a call of another thread inside a span shows here.
  std::map<int, std::map<pid_t, std::uint64_t>> entered;
  std::uint64_t clock = 0;
  std::set<pid_t> threads;  // every thread that made a counted NCCL call
  std::mt19937_64 random{settings().seed * 104729 + std::uint64_t(settings().world_rank)};
};

Table& table() {
  static Table& t = *new Table;
  return t;
}

struct Span {
  bool open = false;
  std::uint64_t start = 0;
  std::set<int> devices;  // the devices it holds
};
thread_local Span span;

std::string thread_name(pid_t t) { return fmt::format("thread {}", t); }

}  // namespace

Inside::Inside(const char* call, int device) : device_(device) {
  Table& t = table();
  const pid_t self = ::gettid();
  unsigned pause_us = 0;
  {
    std::lock_guard lock(t.mutex);
    const std::uint64_t now = ++t.clock;
    t.threads.insert(self);
    Occupant& o = t.by_device[device];
    if (o.thread != 0 && o.thread != self) {
      violation(call, fmt::format("{} calls {} for a communicator on device {} while {} is inside {} for one on the "
                                  "same device: NCCL calls on one device must be serialized across threads (an "
                                  "ncclGroupStart..ncclGroupEnd span counts as one call)",
                                  thread_name(self), call, device, thread_name(o.thread), o.call));
      return;
    }
    const std::uint64_t since = span.open ? span.start : now;
    for (const auto& [other, when] : t.entered[device])
      if (other != self && when > since)
        violation(call, fmt::format("{} made an NCCL call for device {} inside {}'s ncclGroupStart..ncclGroupEnd "
                                    "span, which now calls {} for that device: NCCL calls on one device must be "
                                    "serialized across threads (a group span counts as one call)",
                                    thread_name(other), device, thread_name(self), call));
    t.entered[device][self] = now;
    if (span.open) {
      if (span.devices.insert(device).second) o = {self, 1, fmt::format("an ncclGroupStart..ncclGroupEnd span ({})", call)};
    } else {
      if (o.thread == self) ++o.depth;
      else o = {self, 1, call};
      owned_ = true;
    }
    if (t.threads.size() > 1 && settings().delay_us > 0) pause_us = unsigned(t.random() % (settings().delay_us + 1));
  }
  if (pause_us) std::this_thread::sleep_for(std::chrono::microseconds(pause_us));
}

Inside::~Inside() {
  if (!owned_) return;
  Table& t = table();
  std::lock_guard lock(t.mutex);
  Occupant& o = t.by_device[device_];
  if (o.thread == ::gettid() && --o.depth == 0) o = {};
}

void begin_span() {
  Table& t = table();
  std::lock_guard lock(t.mutex);
  span.open = true;
  span.start = ++t.clock;
  span.devices.clear();
}

void end_span() {
  Table& t = table();
  std::lock_guard lock(t.mutex);
  for (int d : span.devices) {
    Occupant& o = t.by_device[d];
    if (o.thread == ::gettid()) o = {};
  }
  span = {};
}

}  // namespace gpu_double::nccl
