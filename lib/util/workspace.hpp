// Grow-only scratch buffers owned by a communicator, reused across calls so
// that steady-state collectives allocate nothing.
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

namespace strata::util {

class Workspace {
 public:
  // A buffer of at least `bytes` bytes for `slot`, 64-byte aligned. Valid
  // until the next get() of the same slot with a larger size.
  std::byte* get(std::size_t slot, std::size_t bytes);

  // Whether [data, data + bytes) lies inside one of this workspace's buffers.
  bool owns(const void* data, std::size_t bytes) const;

  // After a timeout MPI may still write into our buffers: keep them alive
  // for the life of the process instead of freeing them.
  void abandon();
  ~Workspace();

 private:
  struct Buffer {
    std::byte* data = nullptr;
    std::size_t bytes = 0;
  };
  std::vector<Buffer> buffers_;
  bool abandoned_ = false;
};

}  // namespace strata::util
