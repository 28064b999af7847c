#include "stream.hpp"

#include <fmt/format.h>

#include <chrono>

#include "report.hpp"
#include "settings.hpp"

namespace gpu_double {
namespace {

struct Progress {
  std::mutex mutex;
  std::condition_variable changed;
  std::uint64_t generation = 0;
};

Progress& progress() {
  static Progress& p = *new Progress;
  return p;
}

struct StreamList {
  std::mutex mutex;  // also the enqueue lock: implicit ordering sees one consistent cut of every stream
  std::vector<Stream*> streams;
};

StreamList& stream_list() {
  static StreamList& list = *new StreamList;
  return list;
}

std::uint64_t seed_for(int device, std::size_t serial) {
  std::uint64_t h = settings().seed * 0x9e3779b97f4a7c15ull;
  for (std::uint64_t v : {std::uint64_t(settings().world_rank), std::uint64_t(device), std::uint64_t(serial)})
    h = (h ^ v) * 0x100000001b3ull + 0x7f4a7c15;
  return h;
}

}  // namespace

Range range_of(const void* p, std::size_t bytes) {
  const auto begin = reinterpret_cast<std::uintptr_t>(p);
  return {begin, begin + bytes};
}

bool Point::reached() const { return !stream || stream->reached(seq); }

Stream::Stream(int device, StreamKind kind, std::string name) : device_(device), kind_(kind), name_(std::move(name)) {
  std::size_t serial = 0;
  {
    StreamList& list = stream_list();
    std::lock_guard lock(list.mutex);
    serial = list.streams.size();
    list.streams.push_back(this);
  }
  random_.seed(seed_for(device, serial));
  worker_ = std::thread([this] { work(); });
  worker_.detach();  // streams are never freed: handles stay recognisable after cudaStreamDestroy
}

bool Stream::pending_use(Range r, std::uint64_t* seq, std::string* label) const {
  std::lock_guard lock(mutex_);
  std::uint64_t number = completed_.load() + 1;
  for (const Op& op : queue_) {
    for (const Range& used : op.uses)
      if (used.overlaps(r)) {
        *seq = number;
        *label = op.label;
        return true;
      }
    ++number;
  }
  return false;
}

std::string Stream::next_label() const {
  std::lock_guard lock(mutex_);
  return queue_.empty() ? std::string("nothing") : queue_.front().label;
}

void Stream::destroy() {
  destroyed_ = true;
  std::lock_guard lock(mutex_);
  wake_.notify_all();
}

std::uint64_t Stream::push(Op op) {
  std::lock_guard lock(mutex_);
  queue_.push_back(std::move(op));
  const std::uint64_t seq = ++enqueued_;
  wake_.notify_all();
  return seq;
}

void Stream::work() {
  const unsigned most = settings().delay_us;
  for (;;) {
    Op* op = nullptr;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return !queue_.empty() || destroyed_.load(); });
      if (queue_.empty()) return;
      op = &queue_.front();  // stays in the queue (pending_use sees it) until done; deque keeps it in place
    }
    for (const Point& p : op->after)
      if (!p.reached()) {
        std::unique_lock lock(progress().mutex);
        progress().changed.wait(lock, [&] { return p.reached(); });
      }
    if (most > 0) {
      // Mostly short, now and then long: both orders of two unordered
      // streams happen within a few operations.
      const std::uint64_t draw = random_();
      const std::uint64_t micros = draw % 32 == 0 ? most * 20ull : (draw >> 8) % (most + 1ull);
      if (micros) std::this_thread::sleep_for(std::chrono::microseconds(micros));
    }
    if (!device_failed(device_)) {
      try {
        op->run();
      } catch (const std::exception& e) {
        violation(op->label.c_str(), fmt::format("internal error of the test double: {}", e.what()));
      }
    }
    {
      std::lock_guard lock(mutex_);
      queue_.pop_front();
      ++completed_;
    }
    notify_progress();
  }
}

std::uint64_t submit(Stream& stream, Op op) {
  StreamList& list = stream_list();
  std::lock_guard lock(list.mutex);
  const auto add = [&](Stream& other) {
    if (&other != &stream && other.device() == stream.device() && !other.idle())
      op.after.push_back({&other, other.last()});
  };
  for (Stream* other : list.streams) {
    if (stream.kind() == StreamKind::legacy &&
        (other->kind() == StreamKind::blocking || other->kind() == StreamKind::per_thread))
      add(*other);
    if ((stream.kind() == StreamKind::blocking || stream.kind() == StreamKind::per_thread) &&
        other->kind() == StreamKind::legacy)
      add(*other);
  }
  trace(fmt::format("{}: enqueue {}", stream.name(), op.label));
  return stream.push(std::move(op));
}

std::vector<Stream*> all_streams() {
  StreamList& list = stream_list();
  std::lock_guard lock(list.mutex);
  return list.streams;
}

void notify_progress() {
  Progress& p = progress();
  {
    std::lock_guard lock(p.mutex);
    ++p.generation;
  }
  p.changed.notify_all();
}

void wait_until(const std::function<bool()>& done, const char* call, const std::function<std::string()>& what) {
  Progress& p = progress();
  const auto limit = std::chrono::steady_clock::now() + std::chrono::duration<double>(settings().hang_seconds);
  std::unique_lock lock(p.mutex);
  while (!done()) {
    // Re-checked every 50 ms too: some conditions change without a notice
    // (another process's progress).
    p.changed.wait_for(lock, std::chrono::milliseconds(50));
    if (std::chrono::steady_clock::now() > limit && !done()) {
      lock.unlock();
      fatal(call, fmt::format("waited {} s (STRATA_FAKE_HANG_SECONDS) for {}", settings().hang_seconds, what()));
    }
  }
}

}  // namespace gpu_double
