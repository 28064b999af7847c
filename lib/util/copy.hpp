// Copying message bytes between a user's buffer and strata's own memory
// (the shared-memory sets, staging areas): memcpy, except where memcpy is
// known to crawl.
//
// Why: glibc copies from about 2 KiB up to the L2 size with `rep movsb`,
// and on AMD EPYC (this project's VM of 2026-11-28, glibc 2.36) that runs
// at 2.2-3.0 GB/s instead of 30-86 GB/s when the destination sits 1 to 31
// bytes past the source modulo 64 — which is where a copy from a
// page-aligned shared-memory set into a std::vector's data (16 bytes into
// its page) lands. On 2 ranks placed near each other a 2 MiB all-reduce
// into std::vector buffers took 4x as long as into page-aligned ones
// (docs/ALGORITHMS.md, "Buffers that are not 64-byte aligned").
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace strata::util {

// Below this many bytes memcpy never takes `rep movsb` (glibc's default
// threshold is 2112 B with AVX2, more with wider vectors).
inline constexpr std::size_t kCopyLoopFromBytes = 2048;

// The copy loop memcpy is replaced by: 16-byte aligned stores, unaligned
// loads, 64 bytes an iteration (40-50 GB/s in the caches at every offset
// on the VM above). Precondition as memcpy: the ranges do not overlap.
void copy_by_lines(void* dst, const void* src, std::size_t bytes);

// memcpy(dst, src, bytes), with the same precondition (no overlap), the
// same result and never the slow case above: copies of at least
// kCopyLoopFromBytes whose addresses differ by other than a multiple of 64
// go through copy_by_lines.
inline void copy_bytes(void* dst, const void* src, std::size_t bytes) {
  const auto apart = reinterpret_cast<std::uintptr_t>(dst) - reinterpret_cast<std::uintptr_t>(src);
  if (bytes < kCopyLoopFromBytes || apart % 64 == 0) {
    std::memcpy(dst, src, bytes);
    return;
  }
  copy_by_lines(dst, src, bytes);
}

}  // namespace strata::util
