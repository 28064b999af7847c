// util/slice.hpp: every algorithm that divides data relies on these slices
// covering the range exactly once, contiguously, with sizes differing by at
// most one (larger ones first), so that all ranks agree on the split.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "util/slice.hpp"

using strata::util::even_slice;
using strata::util::Slice;
using strata::util::sub_slice;

namespace {
// Checks the partition of `outer` into `parts` slices; returns false (after
// reporting) on the first violation to keep the output short.
bool check_partition(Slice outer, std::size_t parts) {
  std::size_t expected_offset = outer.offset, smallest = SIZE_MAX, largest = 0;
  for (std::size_t i = 0; i < parts; ++i) {
    const Slice s = sub_slice(outer, parts, i);
    if (s.offset != expected_offset) {
      FAIL_CHECK("slice " << i << "/" << parts << " of " << outer.count << " starts at " << s.offset << ", want "
                          << expected_offset);
      return false;
    }
    if (i > 0 && s.count > sub_slice(outer, parts, i - 1).count) {
      FAIL_CHECK("slice " << i << "/" << parts << " of " << outer.count << " is larger than the one before");
      return false;
    }
    expected_offset = s.end();
    smallest = std::min(smallest, s.count);
    largest = std::max(largest, s.count);
  }
  if (expected_offset != outer.end() || largest - smallest > 1) {
    FAIL_CHECK(parts << " slices of " << outer.count << " end at " << expected_offset << " (want " << outer.end()
                     << "), sizes " << smallest << ".." << largest);
    return false;
  }
  return true;
}
}  // namespace

TEST_CASE("even_slice covers [0, count) exactly, contiguously, sizes differ by at most one") {
  bool ok = true;
  for (std::size_t count = 0; count <= 300 && ok; ++count)
    for (std::size_t parts = 1; parts <= 33 && ok; ++parts) ok = check_partition({0, count}, parts);
  for (std::size_t count : {std::size_t{100003}, std::size_t{1} << 32, (std::size_t{1} << 40) + 7})
    for (std::size_t parts : {1, 2, 3, 7, 8, 1000}) CHECK(check_partition({0, count}, parts));
  CHECK(ok);
}

TEST_CASE("even_slice: concrete values (the first count % parts slices get the extra element)") {
  CHECK(even_slice(10, 3, 0).offset == 0);
  CHECK(even_slice(10, 3, 0).count == 4);
  CHECK(even_slice(10, 3, 1).offset == 4);
  CHECK(even_slice(10, 3, 1).count == 3);
  CHECK(even_slice(10, 3, 2).offset == 7);
  CHECK(even_slice(10, 3, 2).count == 3);
  // Fewer elements than parts: trailing slices are empty but well placed.
  CHECK(even_slice(2, 5, 4).offset == 2);
  CHECK(even_slice(2, 5, 4).count == 0);
  static_assert(even_slice(7, 7, 6).offset == 6);  // usable at compile time
}

TEST_CASE("sub_slice keeps absolute offsets and nests inside its outer slice") {
  const Slice outer = even_slice(1000003, 8, 5);
  CHECK(check_partition(outer, 3));
  for (std::size_t parts = 1; parts <= 9; ++parts)
    for (std::size_t i = 0; i < parts; ++i) {
      const Slice s = sub_slice(outer, parts, i);
      CHECK(s.offset >= outer.offset);
      CHECK(s.end() <= outer.end());
    }
  CHECK(check_partition({17, 0}, 4));
}
