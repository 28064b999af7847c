// What each collective is made of, asked in one place so that a new
// collective is described once: whether it reduces (has an op), whether it
// has a root, and whether its buffers are per-rank blocks of a larger one.
#pragma once

#include "strata/types.hpp"

namespace strata::plan {

// It combines values with a ReduceOp (broadcast and all_gather only move them).
constexpr bool reduces(Collective collective) {
  return collective != Collective::broadcast && collective != Collective::all_gather;
}

// It has a root rank (reduce, broadcast).
constexpr bool rooted(Collective collective) {
  return collective == Collective::reduce || collective == Collective::broadcast;
}

// Its larger buffer holds one block per rank (reduce_scatter: the input,
// all_gather: the output), and Job::count counts one block.
constexpr bool blockwise(Collective collective) {
  return collective == Collective::reduce_scatter || collective == Collective::all_gather;
}

// Whether `rank` ends holding a reduction result that MEAN's finish divides.
constexpr bool holds_reduction(Collective collective, int rank, int root) {
  switch (collective) {
    case Collective::all_reduce:
    case Collective::reduce_scatter: return true;
    case Collective::reduce: return rank == root;
    case Collective::broadcast:
    case Collective::all_gather: return false;
  }
  return false;
}

}  // namespace strata::plan
