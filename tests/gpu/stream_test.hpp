// Shared pieces of the stream-ordered GPU tests (test_gpu_stream_ordered,
// test_gpu_capture, test_gpu_async): a latch that holds a stream until the
// test opens it (the proof, by event order, that a call returned before its
// GPU work could even start), and
// inexact test data of varied magnitude with its reference reduced in rank
// order, so that any other order of the ranks' contributions shows.
#pragma once

#include <cuda_runtime.h>
#include <mpi.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "strata/strata.hpp"

namespace strata::stream_test {

// This rank and the world's size, set by main after MPI_Init. (The
// verdicts every rank agrees on are the harness's every_rank_check.)
inline int rank = 0, size = 1;

// Holds a stream at a host function until open() — or, should nothing open
// it, for kGiveUp, after which it lets the stream go and remembers that it
// had to (the failure of a call that waited for its producer: the test
// opens the latch only after the call returned). kGiveUp bounds a failing
// test; a passing one never waits for it.
class Latch {
 public:
  static constexpr std::chrono::seconds kGiveUp{20};

  // Enqueues the hold on `stream`.
  void hold(cudaStream_t stream) {
    open_ = false;
    gave_up_ = false;
    cudaLaunchHostFunc(stream, &Latch::wait_on, this);
  }
  // Enqueues the release on `stream`: a host function there opens the latch
  // when that stream reaches it.
  void open_from(cudaStream_t stream) { cudaLaunchHostFunc(stream, &Latch::open_it, this); }
  void open() { open_ = true; }
  bool gave_up() const { return gave_up_; }

 private:
  static void CUDART_CB wait_on(void* self) {
    auto* latch = static_cast<Latch*>(self);
    const auto until = std::chrono::steady_clock::now() + kGiveUp;
    while (!latch->open_.load()) {
      if (std::chrono::steady_clock::now() > until) {
        latch->gave_up_ = true;
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  static void CUDART_CB open_it(void* self) { static_cast<Latch*>(self)->open(); }

  std::atomic<bool> open_{false};
  std::atomic<bool> gave_up_{false};
};

// Rank `r`'s element i: inexact floats over 40 binades, both signs, so that
// sums in another order of the ranks give other bits for many elements.
inline float contribution(int r, std::size_t i) {
  const int exponent = static_cast<int>((i * 7 + std::size_t(r) * 13) % 40) - 20;
  const double mantissa = 1.0 + double((i * 2654435761u + std::size_t(r) * 40503u) % 1000) / 997.0;
  const double sign = ((i + std::size_t(r)) % 3 == 0) ? -1.0 : 1.0;
  return float(sign * std::ldexp(mantissa, exponent));
}

// Element i of the sum over ranks 0..n-1 in rank order ((c0 + c1) + c2 ...),
// in f32 as the kernels and NCCL's double reduce; mean divides once.
inline float reference(std::size_t i, int n, bool mean = false) {
  float acc = contribution(0, i);
  for (int r = 1; r < n; ++r) acc = acc + contribution(r, i);
  return mean ? acc / float(n) : acc;
}

// `count` floats on the device, uploaded from pinned memory on `stream`.
struct DeviceFloats {
  float* device = nullptr;
  float* pinned = nullptr;
  std::size_t count = 0;

  explicit DeviceFloats(std::size_t n) : count(n) {
    cudaMalloc(&device, n * sizeof(float));
    cudaMallocHost(&pinned, n * sizeof(float));
  }
  ~DeviceFloats() {
    cudaFree(device);
    cudaFreeHost(pinned);
  }
  DeviceFloats(const DeviceFloats&) = delete;
  DeviceFloats& operator=(const DeviceFloats&) = delete;

  // Fills the pinned copy with `value(i)` and enqueues its upload on `stream`.
  template <typename Value>
  void upload(cudaStream_t stream, Value&& value) {
    for (std::size_t i = 0; i < count; ++i) pinned[i] = value(i);
    cudaMemcpyAsync(device, pinned, count * sizeof(float), cudaMemcpyHostToDevice, stream);
  }
  // Enqueues the download into the pinned copy on `stream`.
  void download(cudaStream_t stream) {
    cudaMemcpyAsync(pinned, device, count * sizeof(float), cudaMemcpyDeviceToHost, stream);
  }
  Tensor tensor(int gpu, std::size_t offset = 0, std::size_t n = 0) const {
    return {device + offset, n ? n : count - offset, DataType::f32, Memory::cuda, gpu};
  }
};

// Whether `got[i] == want(i)` bit for bit for every i < n; names the first
// difference in `first`.
template <typename Want>
bool same_bits(const float* got, std::size_t n, Want&& want, std::string* first) {
  for (std::size_t i = 0; i < n; ++i) {
    const float w = want(i);
    if (std::memcmp(&got[i], &w, sizeof w) != 0) {
      if (first) *first = "element " + std::to_string(i) + " is " + std::to_string(got[i]) + ", want " + std::to_string(w);
      return false;
    }
  }
  return true;
}

}  // namespace strata::stream_test
