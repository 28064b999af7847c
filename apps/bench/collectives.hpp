// One small descriptor per collective, nccl-tests style: how to call it in
// strata (blocking, non-blocking, persistent), how to call the MPI baseline (the NCCL one lives with the CUDA
// code, nccl_baseline.cpp), its bus-bandwidth factor and who holds the
// result. The driver (main.cpp) owns timing, data and checking.
#pragma once

#include <mpi.h>

#include <string_view>

#include "buffers.hpp"
#include "options.hpp"
#include "strata/strata.hpp"

namespace bench {

// What a descriptor's run functions get.
struct Context {
  strata::Communicator& comm;
  MPI_Comm mpi_comm;  // same ranks, for the baseline
  strata::ReduceOp op;
  int root;
  strata::CommunicationOptions call;
  strata::PackingOptions packing;  // batch only
};

// Which buffer holds one block per rank (reduce_scatter: the input,
// all_gather: the output); the other holds one block.
enum class Blocks { none, input, output };

struct Collective {
  std::string_view name;
  strata::Collective kind;              // what algorithm_for is asked about (batch: all_reduce)
  std::string_view baseline_name;      // the MPI call --baseline mpi times
  std::string_view nccl_baseline_name;  // the NCCL call --baseline nccl times (nccl_baseline.cpp)
  std::string_view bus_factor_formula;  // as printed in the header and docs
  double (*bus_factor)(int nranks);     // busbw = algbw * bus_factor(n)
  bool rooted;             // uses --root (printed in the root column)
  bool reduces;            // false: the result is the root's data (broadcast)
  bool result_on_root;     // only the root's output is checked (reduce)
  bool always_in_place;    // one buffer per tensor (broadcast, batch)
  void (*run)(Context&, Buffers&);                // the blocking call
  void (*run_baseline)(Context&, Buffers&);
  strata::Request (*start)(Context&, Buffers&);   // the non-blocking call (i*), started
  // The persistent call (*_init), bound to the buffers' current views and
  // not started; null where strata has none (batch).
  strata::Request (*bind)(Context&, Buffers&);
  Blocks blocks = Blocks::none;
};

const Collective& collective_for(CollectiveKind kind);

}  // namespace bench
