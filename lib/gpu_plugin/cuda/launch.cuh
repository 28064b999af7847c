// Grid sizing and the aligned-body split shared by strata's element-wise
// kernels: grid-stride loops over 16-byte vectors for the aligned body and
// scalar elements for the head and tail. Included by .cu files only (it
// launches kernels).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <tuple>

#include "gpu_plugin/cuda/check.hpp"

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

// How an element-wise kernel covers `count` elements of S: `head` scalar
// elements up to the first 16-byte boundary, then `vectors` 16-byte
// vectors, then the scalar tail; `threads` is the work of the busier of
// the two loops (one thread per vector or per scalar element).
struct Split {
  std::size_t head = 0;
  std::size_t vectors = 0;
  std::size_t threads = 0;
};

// The split of `count` elements of S at p, q and r (the same pointer may
// be passed more than once): aligned_head, then whole vectors.
template <typename S>
__host__ Split split_elements(std::size_t count, const void* p, const void* q, const void* r) {
  constexpr std::size_t kPer = kVectorBytes / sizeof(S);
  Split split;
  split.head = aligned_head<S>(count, p, q, r);
  split.vectors = (count - split.head) / kPer;
  const std::size_t scalar = count - split.vectors * kPer;
  split.threads = split.vectors > scalar ? split.vectors : scalar;
  return split;
}

// Launches `kernel` on `stream` with `grid` blocks of kThreads threads,
// each argument converted to the kernel's parameter type as <<<...>>>
// would. The launch's own return code says whether it failed (BackendError
// then): the thread's last CUDA error, which may hold the caller's own
// pending error, is left as it was on success.
template <typename... Params, typename... Args>
__host__ void launch(void (*kernel)(Params...), dim3 grid, cudaStream_t stream, Args... args) {
  std::tuple<Params...> values(args...);
  std::apply(
      [&](auto&... value) {
        void* pointers[] = {static_cast<void*>(&value)...};
        STRATA_CHECK_CUDA(
            cudaLaunchKernel(reinterpret_cast<const void*>(kernel), grid, dim3(kThreads), pointers, 0, stream));
      },
      values);
}

}  // namespace strata::cuda
