// One rank's benchmark buffers, in host or CUDA memory.
//
// The collective runs on the tensors (`in()`, `out()`); the bench fills and
// checks host copies (`host_in()`, `host_out()`). For host memory the two are
// the same bytes and upload()/download() do nothing; for CUDA memory the
// tensors are device allocations and upload()/download() copy between them
// and the host copies, so data generation and the exact check are the same
// code for both memory kinds.
#pragma once

#include <cstddef>
#include <memory>
#include <span>
#include <vector>

#include "strata/types.hpp"

namespace bench {

// Device memory for the tensors and how bytes get there and back (CUDA:
// cuda_buffers.hpp). Host memory needs none of this: Buffers allocates it
// itself when given no DeviceMemory.
class DeviceMemory {
 public:
  virtual ~DeviceMemory() = default;
  virtual strata::Memory kind() const = 0;
  virtual int device() const = 0;
  // At least `bytes` bytes; throws std::runtime_error saying why when it cannot.
  virtual void* allocate(std::size_t bytes) = 0;
  virtual void release(void* data) noexcept = 0;
  // Blocking copies; throw std::runtime_error on failure.
  virtual void upload(void* device_data, const void* host_data, std::size_t bytes) = 0;
  virtual void download(void* host_data, const void* device_data, std::size_t bytes) = 0;
};

// reduce_scatter and all_gather: one of the two buffers holds `ranks`
// blocks of the count, the other one block; in place, the smaller one is
// the larger one's block `rank`.
struct BlockLayout {
  int ranks = 1;
  int rank = 0;
  bool whole_input = false;   // reduce_scatter
  bool whole_output = false;  // all_gather
};

class Buffers {
 public:
  // One tensor per entry of `counts`; `out` aliases `in` when in place.
  // `memory` null: host memory. The DeviceMemory must outlive the Buffers.
  // With `blocks`, counts are one block's (sweep only: one tensor).
  // `host_offset`: host tensors start that many bytes past a page boundary
  // (host memory only; 0 with a DeviceMemory).
  Buffers(const std::vector<std::size_t>& counts, strata::DataType dtype, bool in_place, DeviceMemory* memory = nullptr,
          BlockLayout blocks = {}, std::size_t host_offset = 0);
  Buffers(const Buffers&) = delete;
  Buffers& operator=(const Buffers&) = delete;
  ~Buffers();

  // Size sweep: the single tensor's views cover the first `count` elements
  // of storage allocated for the largest size (as nccl-tests does).
  void set_count(std::size_t count);

  // What the collective gets (device pointers for CUDA memory).
  std::span<strata::Tensor> in() { return in_; }
  std::span<strata::Tensor> out() { return out_; }
  // The host copies of tensor t, `in()[t].count` elements each.
  void* host_in(std::size_t t) { return host_in_.at(t); }
  void* host_out(std::size_t t) { return host_out_.at(t); }

  // Host copies -> tensors: every input, and the outputs too when out of
  // place (so that their poison reaches the device). No-op for host memory.
  void upload();
  // Output tensors -> host copies. No-op for host memory.
  void download();

  bool in_place() const { return in_place_; }
  strata::Memory memory() const { return memory_ ? memory_->kind() : strata::Memory::host; }
  // Elements and bytes of the larger buffer of every tensor (what a row's
  // size says, and what the spec chooses by).
  std::size_t total_count() const;
  std::size_t total_bytes() const;

 private:
  // `bytes` starting host_offset_ bytes past a page boundary.
  void* allocate_host(std::size_t bytes);
  void release_all() noexcept;
  // Points the smaller buffer of a blockwise in-place pair at its block.
  void alias_block();

  DeviceMemory* memory_;
  BlockLayout blocks_;
  std::vector<void*> host_storage_, device_storage_;
  std::vector<strata::Tensor> in_, out_;
  std::vector<void*> host_in_, host_out_;
  void* storage_in_ = nullptr;       // tensor 0's first allocation (device or host)
  void* storage_host_in_ = nullptr;  // and its host copy
  bool in_place_;
  std::size_t host_offset_;
};

}  // namespace bench
