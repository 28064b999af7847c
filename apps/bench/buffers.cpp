// Buffers: page-aligned host storage, plus device storage and the copies
// between them when the tensors live in device memory.
#include "buffers.hpp"

#include <cstdlib>
#include <new>

namespace bench {

Buffers::Buffers(const std::vector<std::size_t>& counts, strata::DataType dtype, bool in_place, DeviceMemory* memory)
    : memory_(memory), in_place_(in_place) {
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
      const auto [host_in, in] = allocate(count);
      const auto [host_out, out] = in_place ? std::pair{host_in, in} : allocate(count);
      in_.push_back({in, count, dtype, kind, device});
      out_.push_back({out, count, dtype, kind, device});
      host_in_.push_back(host_in);
      host_out_.push_back(host_out);
    }
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
  // Page-aligned, like the buffers of a real application's allocator for
  // large tensors (and what pinned staging copies best from).
  void* p = std::aligned_alloc(4096, bytes);
  if (!p) throw std::bad_alloc();
  host_storage_.push_back(p);
  return p;
}

void Buffers::set_count(std::size_t count) {
  in_.at(0).count = count;
  out_.at(0).count = count;
}

void Buffers::upload() {
  if (!memory_) return;
  for (std::size_t t = 0; t < in_.size(); ++t) {
    memory_->upload(in_[t].data, host_in_[t], in_[t].bytes());
    if (!in_place_) memory_->upload(out_[t].data, host_out_[t], out_[t].bytes());
  }
}

void Buffers::download() {
  if (!memory_) return;
  for (std::size_t t = 0; t < out_.size(); ++t) memory_->download(host_out_[t], out_[t].data, out_[t].bytes());
}

std::size_t Buffers::total_count() const {
  std::size_t total = 0;
  for (const auto& t : in_) total += t.count;
  return total;
}

std::size_t Buffers::total_bytes() const {
  return in_.empty() ? 0 : total_count() * strata::dtype_size(in_[0].dtype);
}

}  // namespace bench
