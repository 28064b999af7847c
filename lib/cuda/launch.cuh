// Grid sizing and the aligned-body split shared by strata's element-wise
// kernels: grid-stride loops over 16-byte vectors for the aligned body and
// scalar elements for the head and tail.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace strata::cuda {

constexpr int kThreads = 256;
constexpr std::size_t kVectorBytes = 16;

// How many blocks of kThreads threads of `kernel` are resident at once on
// the current device: its occupancy per SM
// (cudaOccupancyMaxActiveBlocksPerMultiprocessor, which accounts for the
// kernel's registers) times the SMs. Asked once per kernel and device.
unsigned resident_blocks(const void* kernel);

// Blocks for `work` items of one thread each: enough to cover the work,
// at most one full wave of resident blocks (grid-stride loops do the rest,
// so every launched block stays resident and no tail wave is left).
template <typename Kernel>
unsigned grid_for(Kernel kernel, std::size_t work) {
  const unsigned cap = resident_blocks(reinterpret_cast<const void*>(kernel));
  const std::size_t blocks = (work + kThreads - 1) / kThreads;
  return blocks == 0 ? 1u : blocks < cap ? unsigned(blocks) : cap;
}

// Elements before the first 16-byte boundary of `p`, or `count` when the
// pointers disagree modulo 16 (then everything is scalar).
template <typename S>
__host__ std::size_t aligned_head(std::size_t count, const void* p, const void* q, const void* r) {
  const auto mis = reinterpret_cast<std::uintptr_t>(p) % kVectorBytes;
  if (reinterpret_cast<std::uintptr_t>(q) % kVectorBytes != mis ||
      reinterpret_cast<std::uintptr_t>(r) % kVectorBytes != mis || mis % sizeof(S) != 0)
    return count;
  const std::size_t head = mis == 0 ? 0 : (kVectorBytes - mis) / sizeof(S);
  return head < count ? head : count;
}

}  // namespace strata::cuda
