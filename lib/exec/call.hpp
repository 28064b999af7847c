// A validated call, as the facades hand it to the Session: one collective
// on one tensor (Call) or on a batch of tensors across local replicas
// (BatchCall). Internal header.
#pragma once

#include <cstddef>
#include <functional>
#include <string_view>
#include <vector>

#include "gpu/backend.hpp"
#include "plan/choose.hpp"
#include "plan/fingerprint.hpp"
#include "plan/job.hpp"
#include "plan/packing.hpp"
#include "plan/spec.hpp"
#include "strata/options.hpp"
#include "strata/types.hpp"

namespace strata::exec {

// When a CUDA call runs later than it was made (a request started before
// its turn, a stream-ordered call handed to the progress thread): where its
// producer was when it was made (fences, by replica device, or one for the
// given stream), and, for a handed-over call, the gate its caller's stream
// waits at until it ran. Made by Executor::order_now.
struct Ordering {
  std::vector<gpu::Fence> ready;
  gpu::Gate gate;
};

// One validated collective on one tensor.
struct Call {
  Collective collective = Collective::all_reduce;
  plan::Job job;                // op may be mean; shards and chunk_bytes are filled in by the plan;
                                // reduce_scatter and all_gather: count is one rank's block
  Memory memory = Memory::host;
  int device = -1;              // CUDA tensors: the tensor's device (-1 = the rank's)
  std::size_t contributors = 1; // mean's divisor: ranks x replicas
  const CommunicationOptions* options = nullptr;
  const plan::Spec* spec = nullptr;  // null: the communicator's spec
  std::string_view name = {};        // what messages call it; empty: the collective ("batch_all_reduce" for packs)
  std::size_t blocks = 1;            // reduce_scatter, all_gather: blocks in the larger buffer (the ranks)
  bool request = false;              // started by a request (non-blocking or persistent), not a blocking call
  bool persistent = false;           // a request that is persistent (what the flight recorder calls its form)
  const Ordering* ordering = nullptr;  // CUDA: as made earlier (null: as the producer is when it runs)

  // The call's size as specs, plans and messages count it: the larger
  // buffer (for reduce_scatter the input, for all_gather the output).
  std::size_t bytes() const { return job.bytes() * blocks; }
  // What it reduces, as plans ask (the reproducible modes plan by it).
  plan::Reduction reduction() const { return {job.op, job.dtype}; }
};

// A validated batch: batch[k][r] is logical tensor k on local replica r
// (the same replica count on every rank). all_reduce: every replica of
// every rank gets op over all replicas of all ranks; reduce: only `root`'s
// replicas do; broadcast: root's replica 0 goes to every replica of every
// rank. Ranks with lands_here = false take part without their tensors
// changing (a facade's destination that is not them).
struct BatchCall {
  Collective collective = Collective::all_reduce;
  const std::vector<std::vector<Tensor>>* batch = nullptr;
  ReduceOp op = ReduceOp::sum;
  int root = 0;
  bool lands_here = true;
  PackingOptions packing;
  const CommunicationOptions* options = nullptr;
  const plan::Spec* spec = nullptr;  // null: the communicator's spec
  const std::function<void(std::size_t)>* on_pack_done = nullptr;
  bool request = false;                // as for Call
  const Ordering* ordering = nullptr;  // as for Call

  // What messages call it: "batch_all_reduce", "batch_reduce", "batch_broadcast".
  std::string_view name() const { return plan::operation_name(plan::batch_operation(collective)); }
};

// The shapes plan::make_packs takes: replica 0 of each tensor of `batch`.
std::vector<plan::TensorShape> shapes_of(const std::vector<std::vector<Tensor>>& batch);

}  // namespace strata::exec
