// RAII wrappers for the CUDA objects the backend keeps: a non-blocking
// stream, events, and grow-only device and pinned host buffers. Destructors
// never throw (errors there are ignored: the process may be tearing down).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <mutex>
#include <vector>

namespace strata::cuda {

// Makes `device` current for the guard's lifetime.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = -1;
};

class Stream {
 public:
  Stream();  // on the current device, cudaStreamNonBlocking
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  cudaStream_t get() const { return stream_; }
  // True when all work enqueued so far finished; throws BackendError on a CUDA error.
  bool done() const;

 private:
  cudaStream_t stream_ = nullptr;
};

class Event {
 public:
  Event();  // timing disabled
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  void record(cudaStream_t stream);
  bool done() const;  // throws BackendError on a CUDA error
  cudaEvent_t get() const { return event_; }

 private:
  cudaEvent_t event_ = nullptr;
};

// Memory a grow-only buffer gave up while work enqueued before may still
// read or write it: freed by release() once the owner knows that work is
// done (after waiting for its streams), or leaked by abandon() when it
// never will be (an aborted call). Never freed earlier: a grown buffer's
// old memory may be the source of a copy still queued on a stream. The
// thread driving calls adds while a watcher may release: it locks.
class Retired {
 public:
  Retired() = default;
  ~Retired();  // releases: the owner destroys it only when its streams are idle, or after abandon()
  Retired(const Retired&) = delete;
  Retired& operator=(const Retired&) = delete;
  void add_device(void* p);
  void add_pinned(void* p);
  void release() noexcept;
  void abandon() noexcept;

 private:
  std::mutex mutex_;
  std::vector<void*> device_, pinned_;
};

// Grow-only buffers: get(bytes, retired) returns at least `bytes` bytes
// (256-byte aligned), reallocating only to grow; the memory it outgrew goes
// to `retired`, not back to CUDA. abandon() leaks the memory on purpose:
// after an aborted call a peer or NCCL may still touch it.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* get(std::size_t bytes, Retired& retired);
  void abandon() { data_ = nullptr, bytes_ = 0; }

 private:
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  ~PinnedBuffer();
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  void* get(std::size_t bytes, Retired& retired);
  void abandon() { data_ = nullptr, bytes_ = 0; }

 private:
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

}  // namespace strata::cuda
