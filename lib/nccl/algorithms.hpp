// The GPU building blocks the levels (levels.hpp) are made of, one file
// each, over an Engine with a call open (its deadline and messages). They
// trust their input (the plan stage made it) and enqueue work on the
// engine's stream; those that hand data to the host wait themselves.
// `op` is never mean here.
#pragma once

#include <cstddef>
#include <span>

#include "host/algorithm.hpp"
#include "nccl/engine.hpp"
#include "plan/job.hpp"
#include "strata/types.hpp"

namespace strata::nccl {

// flat.cpp: NCCL's own collectives over an NCCL communicator. The reducing
// ones only for ops NCCL reduces as strata does (plan::nccl_reduces).
void nccl_all_reduce(Engine& e, Comm& comm, const plan::Job& job);
void nccl_reduce(Engine& e, Comm& comm, const plan::Job& job);
void nccl_broadcast(Engine& e, Comm& comm, const plan::Job& job);
// Reduce-scatter into `owners` even slices (util::even_slice): member s
// ends with slice s of the reduction in out; and the matching all-gather.
void nccl_reduce_scatter(Engine& e, Comm& comm, const plan::Job& job, int owners);
void nccl_all_gather(Engine& e, Comm& comm, const plan::Job& job, int owners);
// The same reduce-scatter for any op: NCCL only moves the bytes (grouped
// ncclSend/ncclRecv: slice s of every member to member s), and member s
// reduces the contributions in rank order with strata's kernel. For the
// floating min/max that NCCL would get wrong (NaN); same traffic as a
// reduce-scatter, plus one device buffer of the slice x members.
void exchange_reduce_scatter(Engine& e, Comm& comm, const plan::Job& job, int owners);
// Member s sends its slice s of job.out to `root` (grouped send/receive):
// the gather half of a reduce built from exchange_reduce_scatter.
void gather_slices(Engine& e, Comm& comm, const plan::Job& job, int owners, int root);
// One all-reduce over every replica of every rank: buffers[r] on
// devices[r], one NCCL rank each, enqueued in one group on each replica's
// stream. `comms` from ReplicaSet::world.
void nccl_replica_all_reduce(Engine& e, std::span<const ncclComm_t> comms, std::span<void* const> buffers,
                             const plan::Job& job);

// psgpu.cpp: slice owners reduce on their GPU with strata's kernels; the
// bytes travel over MPI through pinned host buffers. Waits itself.
void psgpu_reduce_scatter(Engine& e, MPI_Comm comm, const plan::Job& job, int owners);
void psgpu_all_gather(Engine& e, MPI_Comm comm, const plan::Job& job, int owners);
// acc = c0 op c1 op c2 ... over the `size` contributions of `count`
// elements at [r * slice_bytes] of `contributions` (device memory), in rank
// order, so every owner computes the same bits; enqueued on e.stream().
// Shared by psgpu and exchange_reduce_scatter.
void reduce_in_rank_order(Engine& e, void* acc, const std::byte* contributions, std::size_t slice_bytes, int size,
                          std::size_t count, DataType dtype, ReduceOp op);

// staged.cpp: a host algorithm on device data, chunk by chunk through a
// ring of pinned buffers, device-host copies overlapping the MPI transfers
// of other chunks. Waits itself.
void staged(Engine& e, MPI_Comm comm, Collective collective, const host::Algorithm& algorithm,
            const plan::Job& job);

}  // namespace strata::nccl
