// TensorFlow's all_reduce_spec: which algorithm (and how many shards) runs
// for which tensor size, in its tuple form or its string form, and the
// algorithm names a spec may use.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "strata/types.hpp"

namespace strata {

// One tuple (algorithm, shards, limit): a pack of at most `limit` bytes
// (inclusive) that no earlier tuple took runs `algorithm` with `shards`
// shards. limit = -1 means no bound (only the last tuple). `algorithm` is a
// registered name ("xring", "nccl") or a hierarchical "intra/cross"
// ("nccl/xring"). Limits are bytes, as TensorFlow's documentation says (its
// code counted elements).
struct SpecTuple {
  std::string algorithm;
  int shards = 1;
  long long limit = -1;
  bool operator==(const SpecTuple&) const = default;
};

// A validated all_reduce_spec; "auto" (no tuples) lets strata choose by
// size, memory and topology (docs/ALGORITHMS.md has the tables).
class AllReduceSpec {
 public:
  // "auto".
  AllReduceSpec() = default;
  // The string form (the tf_cnn_benchmarks grammar): alg[#shards] separated
  // by :limit: with k/M/G suffixes as powers of 1024, e.g.
  // "nccl/xring#2:64k:pscpu/pscpu#2", "tree:4k:xring", "auto".
  // Throws InvalidArgument naming the offending part.
  AllReduceSpec(std::string_view text);  // NOLINT: implicit, so a string literal is a spec
  AllReduceSpec(const char* text) : AllReduceSpec(std::string_view(text)) {}
  AllReduceSpec(const std::string& text) : AllReduceSpec(std::string_view(text)) {}
  // The tuple form, e.g. {{"nccl/xring", 2, 65536}, {"pscpu/pscpu", 2, -1}}:
  // limits must increase strictly and the last must be -1; shards >= 1;
  // every name registered. Throws InvalidArgument naming the tuple.
  AllReduceSpec(std::initializer_list<SpecTuple> tuples);
  explicit AllReduceSpec(std::vector<SpecTuple> tuples);

  bool is_auto() const { return tuples_.empty(); }
  // The tuples, in order; empty for "auto".
  const std::vector<SpecTuple>& tuples() const { return tuples_; }
  // The tuple a pack of `bytes` bytes takes: the first whose limit >= bytes;
  // nullptr for "auto".
  const SpecTuple* select(std::size_t bytes) const;
  // The string form; AllReduceSpec(to_string()) == *this.
  std::string to_string() const;
  bool operator==(const AllReduceSpec&) const = default;

 private:
  std::vector<SpecTuple> tuples_;
};

// What one registered algorithm serves.
struct AlgorithmInfo {
  std::string name;
  Memory memory = Memory::host;  // host: host tensors (CUDA tensors through pinned copies); cuda: CUDA tensors only
  bool reduce = true;            // serves reduce (else a spec naming it falls back to the default for reduce)
  bool broadcast = true;         // serves broadcast (likewise)
  bool shared_memory = false;    // inside a node it runs over the node's shared memory (pscpu)
  bool shards = false;           // `#M` changes how it runs; false: `#M` is accepted and ignored
  bool graph_capture = false;    // on CUDA tensors a plan of it alone may be captured into a CUDA graph
                                 // (it runs over NCCL, with no host stages)
  std::string description;       // one line: what it does
};

// Every registered algorithm, in registry order: the names a spec may use
// (and combine as "intra/cross"). The same list in every build; GPU
// algorithms need the GPU backend at run time.
std::vector<AlgorithmInfo> registered_algorithms();

}  // namespace strata
