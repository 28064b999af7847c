// Streams and events. Each stream is an in-order queue run by a worker
// thread of its own, with a seeded random delay before each operation, so
// that work that is not ordered explicitly (a missing cudaStreamWaitEvent,
// a host read before a synchronisation, a buffer freed while queued work
// still uses it) fails reproducibly instead of passing by luck.
//
// Ordering follows CUDA: operations of one stream run in order; a
// cudaStreamWaitEvent makes later operations wait for the event's point in
// another stream; the legacy default stream of a device (stream 0,
// cudaStreamLegacy) waits for all earlier work of the device's blocking
// streams, and work on a blocking stream waits for earlier work on the
// legacy default stream; non-blocking streams take part in neither.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace gpu_double {

// Memory an operation reads or writes: [begin, end) of program addresses.
struct Range {
  std::uintptr_t begin = 0, end = 0;
  bool overlaps(Range other) const { return begin < other.end && other.begin < end; }
};
Range range_of(const void* p, std::size_t bytes);

class Stream;

// "Stream s has completed its operation number seq."
struct Point {
  Stream* stream = nullptr;
  std::uint64_t seq = 0;
  bool reached() const;
};

struct Op {
  std::string label;          // what it is, for messages ("cudaMemcpyAsync device to host, 4096 bytes")
  std::function<void()> run;  // on the stream's worker
  std::vector<Range> uses;    // checked when memory is freed
  std::vector<Point> after;   // explicit waits (cudaStreamWaitEvent)
};

enum class StreamKind { legacy, per_thread, blocking, non_blocking };

class Stream {
 public:
  Stream(int device, StreamKind kind, std::string name);
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  int device() const { return device_; }
  StreamKind kind() const { return kind_; }
  const std::string& name() const { return name_; }

  std::uint64_t last() const { return enqueued_.load(); }     // number of the last operation enqueued
  bool reached(std::uint64_t seq) const { return completed_.load() >= seq; }
  bool idle() const { return completed_.load() == enqueued_.load(); }
  // The first unfinished operation that uses memory overlapping `r`.
  bool pending_use(Range r, std::uint64_t* seq, std::string* label) const;
  // The operation the stream is at (for messages about waits that never end).
  std::string next_label() const;

  // Later operations may not be enqueued; the worker ends once the queue is done.
  void destroy();
  bool destroyed() const { return destroyed_.load(); }

  // NCCL operations for this stream held by an ncclInProgress return (the
  // NCCL double sets it): the stream may not be used until they are in.
  std::atomic<int> held{0};
  std::atomic<const char*> held_by{""};  // the NCCL call that returned ncclInProgress
  // NCCL operations for this stream waiting in an open ncclGroupStart: they
  // reach the stream only at ncclGroupEnd, so waiting on it now misses them.
  std::atomic<int> grouped{0};

 private:
  friend std::uint64_t submit(Stream& stream, Op op);
  std::uint64_t push(Op op);  // under the enqueue lock
  void work();

  const int device_;
  const StreamKind kind_;
  const std::string name_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<Op> queue_;  // front: running or next
  std::atomic<std::uint64_t> enqueued_{0}, completed_{0};
  std::atomic<bool> destroyed_{false};
  std::mt19937_64 random_;
  std::thread worker_;
};

// Enqueues `op` on `stream` with CUDA's implicit ordering against the legacy
// default stream added; returns its number in the stream.
std::uint64_t submit(Stream& stream, Op op);

// Every stream this process made (for cudaFree checks and device syncs).
std::vector<Stream*> all_streams();

// Host waits: blocks until `done()` is true. A wait longer than
// Settings::hang_seconds is what real CUDA would never end: fatal, with
// `what()` saying what it waited for.
void wait_until(const std::function<bool()>& done, const char* call, const std::function<std::string()>& what);
// Wakes host waits and waiting workers (called when anything completes).
void notify_progress();

// The thread's current device has a sticky error once an operation failed
// on it (an illegal address in a kernel, ...): recorded by the device
// table (devices.hpp); workers skip operations of a failed device.
bool device_failed(int device);

struct Capture;  // capture.hpp

// Where an event was last recorded inside a capture: the capture and the
// nodes that precede that point (capture.hpp). `capture` is null for an
// event recorded outside any capture, or never.
struct Mark {
  std::shared_ptr<Capture> capture;
  std::vector<std::size_t> tips;
};

struct EventState {
  int device = 0;
  bool timing = true;
  bool destroyed = false;
  Point point;                   // the last record; stream == nullptr: never recorded
  std::uint64_t generation = 0;  // records so far
  double seconds = -1;           // steady-clock time when the last record completed
  Mark mark;                     // the last record was in a capture: where
};

}  // namespace gpu_double
