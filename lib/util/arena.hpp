// Arena: bump allocation of scratch memory for one call, reset when the
// call is over. Host transports land receives meant for a caller's buffer
// here first when a call has a timeout, so that a receive still pending
// when the call gives up can only ever write into strata's memory.
#pragma once

#include <cstddef>
#include <vector>

namespace strata::util {

class Arena {
 public:
  Arena() = default;
  ~Arena();
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;

  // `bytes` bytes, 64-byte aligned, valid until reset() or abandon().
  // Throws std::bad_alloc.
  std::byte* allocate(std::size_t bytes);

  // Everything allocated is free again; keeps one block as large as this
  // call needed, so steady-state calls allocate nothing. Inline and free
  // when nothing was allocated (the common call).
  void reset() {
    if (total_ != 0) reset_blocks();
  }

  // After a failed call MPI may still write into the blocks: keep them
  // alive for the life of the process (never freed) and start afresh.
  void abandon();

 private:
  void reset_blocks();

  struct Block {
    std::byte* data = nullptr;
    std::size_t bytes = 0;
  };
  std::vector<Block> blocks_;
  std::size_t used_ = 0;   // in blocks_.back()
  std::size_t total_ = 0;  // bytes handed out since the last reset
};

}  // namespace strata::util
