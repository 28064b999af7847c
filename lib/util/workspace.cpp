#include "util/workspace.hpp"

#include <cstdlib>
#include <new>

namespace strata::util {

std::byte* Workspace::get(std::size_t slot, std::size_t bytes) {
  if (slot >= buffers_.size()) buffers_.resize(slot + 1);
  Buffer& buffer = buffers_[slot];
  if (buffer.bytes < bytes) {
    const std::size_t rounded = (bytes + 63) / 64 * 64;
    void* fresh = std::aligned_alloc(64, rounded);
    if (!fresh) throw std::bad_alloc();
    if (!abandoned_) std::free(buffer.data);  // an abandoned buffer may still be in MPI's hands
    buffer = {static_cast<std::byte*>(fresh), rounded};
  }
  return buffer.data;
}

bool Workspace::owns(const void* data, std::size_t bytes) const {
  const auto* p = static_cast<const std::byte*>(data);
  for (const Buffer& buffer : buffers_)
    if (buffer.data && p >= buffer.data && bytes <= buffer.bytes && p - buffer.data <= std::ptrdiff_t(buffer.bytes - bytes))
      return true;
  return false;
}

void Workspace::abandon() {
  abandoned_ = true;
}

Workspace::~Workspace() {
  if (abandoned_) return;  // deliberately leaked, see abandon()
  for (Buffer& buffer : buffers_) std::free(buffer.data);
}

}  // namespace strata::util
