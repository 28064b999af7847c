// Buffers: page-aligned host storage, plus device storage and the copies
// between them when the tensors live in device memory.
#include "buffers.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <new>

namespace bench {

Buffers::Buffers(const std::vector<std::size_t>& counts, strata::DataType dtype, bool in_place, DeviceMemory* memory,
                 BlockLayout blocks, std::size_t host_offset)
    : memory_(memory), blocks_(blocks), in_place_(in_place), host_offset_(host_offset) {
  const auto ranks = static_cast<std::size_t>(blocks.ranks);
  const std::size_t in_blocks = blocks.whole_input ? ranks : 1, out_blocks = blocks.whole_output ? ranks : 1;
  const std::size_t element = strata::dtype_size(dtype);
  // At least one page (host) or one allocation unit (device) more than the
  // data, so that views of 0 elements still point at valid memory.
  auto bytes_for = [&](std::size_t count) { return ((count * element + 4095) / 4096 + 1) * 4096; };
  auto allocate = [&](std::size_t count) {
    const std::size_t bytes = bytes_for(count);
    void* host = allocate_host(bytes);
    void* tensor = host;
    if (memory_) {
      tensor = memory_->allocate(bytes);
      device_storage_.push_back(tensor);
    }
    return std::pair{host, tensor};
  };
  const strata::Memory kind = memory_ ? memory_->kind() : strata::Memory::host;
  const int device = memory_ ? memory_->device() : -1;
  try {
    for (std::size_t count : counts) {
      // In place, one allocation of the larger size serves both.
      const std::size_t larger = count * std::max(in_blocks, out_blocks);
      const auto [host_in, in] = allocate(in_place ? larger : count * in_blocks);
      const auto [host_out, out] = in_place ? std::pair{host_in, in} : allocate(count * out_blocks);
      in_.push_back({in, count * in_blocks, dtype, kind, device});
      out_.push_back({out, count * out_blocks, dtype, kind, device});
      host_in_.push_back(host_in);
      host_out_.push_back(host_out);
    }
    storage_in_ = in_.empty() ? nullptr : in_[0].data;
    storage_host_in_ = host_in_.empty() ? nullptr : host_in_[0];
    alias_block();
  } catch (...) {
    release_all();  // no destructor runs for a half-built object
    throw;
  }
}

Buffers::~Buffers() { release_all(); }

void Buffers::release_all() noexcept {
  for (void* p : host_storage_) std::free(p);
  for (void* p : device_storage_) memory_->release(p);
  host_storage_.clear();
  device_storage_.clear();
}

void* Buffers::allocate_host(std::size_t bytes) {
  // Page-aligned by default, like an allocator's large tensors (PyTorch's,
  // and what pinned staging copies best from); --offset moves the data into
  // the page, as glibc's malloc does for a large std::vector (16 bytes).
  // bytes_for's spare page holds the offset (< 4096).
  void* p = std::aligned_alloc(4096, bytes);
  if (!p) throw std::bad_alloc();
  host_storage_.push_back(p);
  return static_cast<char*>(p) + host_offset_;
}

void Buffers::set_count(std::size_t count) {
  const auto ranks = static_cast<std::size_t>(blocks_.ranks);
  in_.at(0).count = count * (blocks_.whole_input ? ranks : 1);
  out_.at(0).count = count * (blocks_.whole_output ? ranks : 1);
  alias_block();
}

void Buffers::alias_block() {
  if (!in_place_ || in_.empty() || (!blocks_.whole_input && !blocks_.whole_output)) return;
  // The whole buffer starts at the storage; the block sits at `rank` blocks in.
  const std::size_t block_bytes = std::min(in_[0].count, out_[0].count) * strata::dtype_size(in_[0].dtype);
  const std::size_t at = static_cast<std::size_t>(blocks_.rank) * block_bytes;
  auto* device = static_cast<std::byte*>(storage_in_);
  auto* host = static_cast<std::byte*>(storage_host_in_);
  if (blocks_.whole_input) {
    in_[0].data = device, host_in_[0] = host;
    out_[0].data = device + at, host_out_[0] = host + at;
  } else {
    out_[0].data = device, host_out_[0] = host;
    in_[0].data = device + at, host_in_[0] = host + at;
  }
}

void Buffers::upload() {
  if (!memory_) return;
  for (std::size_t t = 0; t < in_.size(); ++t) {
    // In place, all_gather's output holds its input: upload all of it.
    const bool whole_output_in_place = in_place_ && blocks_.whole_output;
    if (!whole_output_in_place) memory_->upload(in_[t].data, host_in_[t], in_[t].bytes());
    if (!in_place_ || whole_output_in_place) memory_->upload(out_[t].data, host_out_[t], out_[t].bytes());
  }
}

void Buffers::download() {
  if (!memory_) return;
  for (std::size_t t = 0; t < out_.size(); ++t) memory_->download(host_out_[t], out_[t].data, out_[t].bytes());
}

std::size_t Buffers::total_count() const {
  std::size_t total = 0;
  for (std::size_t t = 0; t < in_.size(); ++t) total += std::max(in_[t].count, out_[t].count);
  return total;
}

std::size_t Buffers::total_bytes() const {
  return in_.empty() ? 0 : total_count() * strata::dtype_size(in_[0].dtype);
}

}  // namespace bench
