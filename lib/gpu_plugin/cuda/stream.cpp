#include "gpu_plugin/cuda/stream.hpp"

#include "gpu_plugin/cuda/check.hpp"

namespace strata::cuda {

DeviceGuard::DeviceGuard(int device) {
  STRATA_CHECK_CUDA(cudaGetDevice(&previous_));
  if (previous_ != device) STRATA_CHECK_CUDA(cudaSetDevice(device));
}
DeviceGuard::~DeviceGuard() {
  if (previous_ >= 0) cudaSetDevice(previous_);
}

Stream::Stream() { STRATA_CHECK_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking)); }
Stream::~Stream() {
  if (stream_) cudaStreamDestroy(stream_);
}
bool Stream::done() const {
  const cudaError_t rc = cudaStreamQuery(stream_);
  if (rc == cudaErrorNotReady) return false;
  STRATA_CHECK_CUDA(rc);
  return true;
}

Event::Event() { STRATA_CHECK_CUDA(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming)); }
Event::~Event() {
  if (event_) cudaEventDestroy(event_);
}
void Event::record(cudaStream_t stream) { STRATA_CHECK_CUDA(cudaEventRecord(event_, stream)); }
bool Event::done() const {
  const cudaError_t rc = cudaEventQuery(event_);
  if (rc == cudaErrorNotReady) return false;
  STRATA_CHECK_CUDA(rc);
  return true;
}

Retired::~Retired() { release(); }

void Retired::add_device(void* p) {
  std::lock_guard lock(mutex_);
  device_.push_back(p);
}

void Retired::add_pinned(void* p) {
  std::lock_guard lock(mutex_);
  pinned_.push_back(p);
}

void Retired::release() noexcept {
  std::vector<void*> device, pinned;
  {
    std::lock_guard lock(mutex_);
    device.swap(device_);
    pinned.swap(pinned_);
  }
  for (void* p : device) cudaFree(p);
  for (void* p : pinned) cudaFreeHost(p);
}

void Retired::abandon() noexcept {
  std::lock_guard lock(mutex_);
  device_.clear();
  pinned_.clear();
}

DeviceBuffer::~DeviceBuffer() {
  if (data_) cudaFree(data_);
}
void* DeviceBuffer::get(std::size_t bytes, Retired& retired) {
  if (bytes <= bytes_ && data_) return data_;
  if (data_) retired.add_device(data_);
  data_ = nullptr, bytes_ = 0;
  STRATA_CHECK_CUDA(cudaMalloc(&data_, bytes ? bytes : 1));
  bytes_ = bytes;
  return data_;
}

PinnedBuffer::~PinnedBuffer() {
  if (data_) cudaFreeHost(data_);
}
void* PinnedBuffer::get(std::size_t bytes, Retired& retired) {
  if (bytes <= bytes_ && data_) return data_;
  if (data_) retired.add_pinned(data_);
  data_ = nullptr, bytes_ = 0;
  STRATA_CHECK_CUDA(cudaHostAlloc(&data_, bytes ? bytes : 1, cudaHostAllocPortable));
  bytes_ = bytes;
  return data_;
}

}  // namespace strata::cuda
