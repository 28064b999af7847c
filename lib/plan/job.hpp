// One collective's data as every backend sees it (host algorithms, GPU
// algorithms, host staging of CUDA tensors), and what a call is for error
// messages. Plain values: the plan stage fills them, backends trust them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "strata/types.hpp"
#include "util/element.hpp"

namespace strata::plan {

struct Job {
  const void* in = nullptr;  // non-null when count > 0 (for broadcast: == out)
  void* out = nullptr;       // == in when in place; for reduce, null on non-roots is allowed
  std::size_t count = 0;     // > 0: the executor never runs an algorithm with 0
  DataType dtype = DataType::f32;
  ReduceOp op = ReduceOp::sum;  // never mean: the finish stage divides
  int root = 0;                 // reduce and broadcast
  int shards = 1;               // >= 1; what it means is the algorithm's (see docs/ALGORITHMS.md)
  std::size_t chunk_bytes = 0;  // > 0: pipeline granularity for chunked algorithms

  std::size_t element_bytes() const { return util::element_bytes(dtype); }
  std::size_t bytes() const { return count * element_bytes(); }
};

// What a call is, for error messages: "all_reduce #12 (4096 bytes, pscpu/xring)".
struct CallInfo {
  std::string_view collective;  // "all_reduce", "reduce", ...
  std::uint64_t sequence = 0;   // per communicator, from 1
  std::size_t bytes = 0;
  std::string_view algorithm;   // as planned, e.g. "pscpu/xring#2"
};

}  // namespace strata::plan
