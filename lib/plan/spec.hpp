// all_reduce_spec: which algorithm (and how many shards) runs for which
// message size. Text form (the tf_cnn_benchmarks grammar):
//   alg[#shards] ( ":" limit ":" alg[#shards] )*     limits: bytes, k/M/G = 1024^n
// e.g. "xring", "tree:4k:rechd:16M:xring#2", "auto". Tuple form: a list of
// (algorithm, shards, limit) with limit -1 = unbounded on the last entry.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "plan/algorithm.hpp"
#include "strata/spec.hpp"

namespace strata::plan {

// (algorithm, shards, limit): the public tuple (strata/spec.hpp).
using SpecEntry = SpecTuple;

struct Spec {
  std::vector<SpecEntry> entries;  // empty only for "auto"
  bool is_auto() const { return entries.empty(); }
  // The text form; parse_spec(to_string()) == *this.
  std::string to_string() const;
  // The entry a message of `bytes` bytes uses: the first whose limit >= bytes.
  const SpecEntry& select(std::size_t bytes) const;
};

// Parse and validate the text form. Every level of every algorithm name
// must be in `known`. Throws InvalidArgument naming the offending part.
Spec parse_spec(std::string_view text, Catalogue known);

// Validate the tuple form; throws InvalidArgument like parse_spec.
Spec make_spec(std::vector<SpecEntry> entries, Catalogue known);

}  // namespace strata::plan
