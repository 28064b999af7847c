// util/copy.hpp: copy_bytes stands in for memcpy on every bulk copy of
// message data, so it must give memcpy's bytes for every length and every
// pair of alignments, touch nothing outside the destination range, and
// take its own loop (copy_by_lines) where the addresses differ by other
// than a multiple of 64.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "util/copy.hpp"

using strata::util::copy_by_lines;
using strata::util::copy_bytes;

namespace {

constexpr std::size_t kPage = 4096;
constexpr std::byte kGuard{0xA5};

// Copies `bytes` from `src_offset` past a page boundary to `dst_offset`
// past another with `copy`; returns false (after reporting) on the first
// byte that differs from the source or a guard byte that changed.
template <typename Copy>
bool copies_exactly(Copy copy, std::size_t bytes, std::size_t src_offset, std::size_t dst_offset) {
  static std::vector<std::byte> source_storage(3 * kPage + 16384), target_storage(3 * kPage + 16384);
  auto page_aligned = [](std::vector<std::byte>& v) {
    const auto at = reinterpret_cast<std::uintptr_t>(v.data());
    return v.data() + (kPage - at % kPage) % kPage;
  };
  std::byte* src = page_aligned(source_storage) + src_offset;
  std::byte* dst = page_aligned(target_storage) + kPage + dst_offset;  // a page of guard before
  for (std::size_t i = 0; i < bytes; ++i) src[i] = std::byte(static_cast<unsigned char>(i * 131 + src_offset + 7));
  std::fill(dst - 64, dst + bytes + 64, kGuard);
  copy(dst, src, bytes);
  for (std::size_t i = 0; i < bytes; ++i)
    if (dst[i] != src[i]) {
      FAIL_CHECK(bytes << " bytes from +" << src_offset << " to +" << dst_offset << ": byte " << i << " differs");
      return false;
    }
  for (std::size_t i = 1; i <= 64; ++i)
    if (dst[-static_cast<std::ptrdiff_t>(i)] != kGuard || dst[bytes + i - 1] != kGuard) {
      FAIL_CHECK(bytes << " bytes from +" << src_offset << " to +" << dst_offset << ": wrote outside the range");
      return false;
    }
  return true;
}

}  // namespace

TEST_CASE("copy_bytes gives memcpy's bytes at every length and alignment") {
  const std::size_t lengths[] = {0, 1, 15, 16, 17, 63, 64, 65, 127, 2047, 2048, 2049, 4095, 4096, 4097, 12345};
  for (std::size_t bytes : lengths)
    for (std::size_t src_offset = 0; src_offset < 64; src_offset += 3)
      for (std::size_t dst_offset = 0; dst_offset < 64; dst_offset += 5)
        if (!copies_exactly(copy_bytes, bytes, src_offset, dst_offset)) return;
}

TEST_CASE("copy_by_lines gives memcpy's bytes at every length and alignment") {
  for (std::size_t bytes = 0; bytes < 300; ++bytes)
    for (std::size_t src_offset = 0; src_offset < 32; ++src_offset)
      for (std::size_t dst_offset = 0; dst_offset < 32; dst_offset += 7)
        if (!copies_exactly(copy_by_lines, bytes, src_offset, dst_offset)) return;
  CHECK(copies_exactly(copy_by_lines, 12345, 16, 0));
  CHECK(copies_exactly(copy_by_lines, 12345, 0, 16));
}
