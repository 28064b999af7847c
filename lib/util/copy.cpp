#include "util/copy.hpp"

#include <algorithm>

namespace strata::util {
namespace {

// GCC and Clang vector types: one 16-byte register, the stores' aligned
// and the loads' unaligned flavour.
using Aligned16 = char __attribute__((vector_size(16)));
using Unaligned16 = char __attribute__((vector_size(16), aligned(1)));

}  // namespace

void copy_by_lines(void* dst, const void* src, std::size_t bytes) {
  auto* d = static_cast<char*>(dst);
  const auto* s = static_cast<const char*>(src);
  const std::size_t head = std::min<std::size_t>(bytes, (16 - reinterpret_cast<std::uintptr_t>(d) % 16) % 16);
  std::memcpy(d, s, head);
  d += head, s += head, bytes -= head;
  for (; bytes >= 64; bytes -= 64, d += 64, s += 64) {
    const Unaligned16* from = reinterpret_cast<const Unaligned16*>(s);
    const Unaligned16 a = from[0], b = from[1], c = from[2], e = from[3];
    Aligned16* to = reinterpret_cast<Aligned16*>(d);
    to[0] = a, to[1] = b, to[2] = c, to[3] = e;
    // Opaque to the optimiser: without it GCC turns the loop back into a
    // call of memcpy, the very call this function stands in for.
    asm volatile("" : "+r"(d), "+r"(s));
  }
  std::memcpy(d, s, bytes);
}

}  // namespace strata::util
