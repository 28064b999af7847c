// RAII wrappers for the CUDA objects the backend keeps: a non-blocking
// stream, events, and grow-only device and pinned host buffers. Destructors
// never throw (errors there are ignored: the process may be tearing down).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

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

// Grow-only buffers: get(bytes) returns at least `bytes` bytes (256-byte
// aligned), reallocating only to grow. abandon() leaks the memory on
// purpose: after an aborted call a peer or NCCL may still touch it.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* get(std::size_t bytes);
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
  void* get(std::size_t bytes);
  void abandon() { data_ = nullptr, bytes_ = 0; }

 private:
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

}  // namespace strata::cuda
