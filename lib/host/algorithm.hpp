// The host algorithm interface and its registry.
//
// An algorithm is one file in lib/host/ that defines a `const Algorithm`
// and one line in registry.cpp's table. Algorithms trust their input: the
// core layer validated it, and the plan layer picked the algorithm and its
// shard count.
#pragma once

#include <cstddef>
#include <span>
#include <string_view>

#include "host/transport.hpp"
#include "strata/types.hpp"

namespace strata::host {

// One collective's data, as an algorithm sees it.
struct Job {
  const void* in = nullptr;  // non-null when count > 0 (for broadcast: == out)
  void* out = nullptr;       // == in when in place; for reduce, null on non-roots is allowed
  std::size_t count = 0;     // > 0: the core layer never calls an algorithm with 0
  DataType dtype = DataType::f32;
  ReduceOp op = ReduceOp::sum;  // never mean: the finish stage divides
  int root = 0;                 // reduce and broadcast
  int shards = 1;               // >= 1; what it means is the algorithm's (see docs/ALGORITHMS.md)
  std::size_t chunk_bytes = 0;  // > 0: pipeline granularity for chunked algorithms

  std::size_t element_bytes() const { return dtype_size(dtype); }
};

using CollectiveFn = void (*)(Transport&, const Job&);

struct Algorithm {
  std::string_view name;
  std::string_view description;
  CollectiveFn all_reduce;  // required
  CollectiveFn reduce;      // nullptr: declines; the selector runs `tree` instead
  CollectiveFn broadcast;   // nullptr: declines; the selector runs `tree` instead
  // Wants the node's shared-memory segment (Transport::shared_memory) when
  // its communicator lies in one node; it then also serves as the intra-node
  // level of hierarchical plans with real reduce-scatter / all-gather.
  bool uses_shared_memory = false;
};

// Every registered host algorithm, in registry order.
std::span<const Algorithm* const> algorithms();

// The algorithm called `name`, or nullptr.
const Algorithm* find_algorithm(std::string_view name);

}  // namespace strata::host
