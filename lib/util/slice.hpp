// Splitting `count` elements into `parts` contiguous slices as evenly as
// possible: the first count % parts slices get one element more. Every
// algorithm that divides data uses this, so all ranks agree on the split.
#pragma once

#include <cstddef>

namespace strata::util {

struct Slice {
  std::size_t offset = 0;  // in elements
  std::size_t count = 0;
  std::size_t end() const { return offset + count; }
};

// Precondition: parts > 0 and index < parts.
constexpr Slice even_slice(std::size_t count, std::size_t parts, std::size_t index) {
  const std::size_t base = count / parts, extra = count % parts;
  const std::size_t offset = index * base + (index < extra ? index : extra);
  return {offset, base + (index < extra ? 1 : 0)};
}

// The owners' slices of the Level contract (plan/level.hpp): what member s
// of a group ends with after a reduce-scatter into `owners` slices, and
// what the hierarchical driver runs across nodes. Equal blocks of
// count / owners elements, the remainder on the last owner, so that the
// blocks are NCCL's own (ncclReduceScatter, ncclAllGather over the divisible
// prefix) and only the short tail needs a rooted call of its own.
// Precondition: owners > 0 and index < owners.
constexpr Slice owner_slice(std::size_t count, std::size_t owners, std::size_t index) {
  const std::size_t base = count / owners;
  return {index * base, index + 1 == owners ? count - index * base : base};
}

// The slice `index` of `parts` inside `outer` (offsets stay absolute).
constexpr Slice sub_slice(Slice outer, std::size_t parts, std::size_t index) {
  const Slice inner = even_slice(outer.count, parts, index);
  return {outer.offset + inner.offset, inner.count};
}

// The address of element `elements` of a buffer of `element_bytes`-byte
// elements (the byte arithmetic every algorithm that moves slices needs).
inline std::byte* element_at(void* base, std::size_t elements, std::size_t element_bytes) {
  return static_cast<std::byte*>(base) + elements * element_bytes;
}
inline const std::byte* element_at(const void* base, std::size_t elements, std::size_t element_bytes) {
  return static_cast<const std::byte*>(base) + elements * element_bytes;
}

}  // namespace strata::util
