// strata::Plan: what a call or a batch will run, as a printable value:
// the packs and the algorithm each runs (Communicator::plan_for).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "strata/types.hpp"

namespace strata {

struct PlannedPack {
  DataType dtype = DataType::f32;
  std::size_t count = 0;             // elements
  std::size_t bytes = 0;
  std::vector<std::size_t> tensors;  // the caller's tensors with elements in this pack (indexes, ascending)
  // As it runs: "xring#2", or "pscpu/xring" when hierarchical (intra/cross).
  std::string algorithm;
};

struct Plan {
  Collective collective = Collective::all_reduce;
  Memory memory = Memory::host;
  std::vector<PlannedPack> packs;  // in the order they run (and on_pack_done fires)

  // One line per pack: "pack 0: f32 x 1024 (4.0 KiB), tensors 0-3: pscpu".
  std::string to_string() const;
};

}  // namespace strata
