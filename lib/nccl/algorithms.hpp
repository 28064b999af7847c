// The GPU algorithms, one file each, over an Engine. They trust their input
// (lib/gpu/backend.cpp validated the job and picked them) and enqueue work
// on the engine's stream; the caller waits. `op` is never mean here.
#pragma once

#include <cstddef>
#include <span>

#include "strata/types.hpp"
#include "host/algorithm.hpp"
#include "plan/job.hpp"
#include "nccl/engine.hpp"

namespace strata::nccl {


// flat.cpp: NCCL's own collectives over an NCCL communicator.
void nccl_all_reduce(Engine& e, Comm& comm, const plan::Job& job, const util::Deadline& d, const plan::CallInfo& info);
void nccl_reduce(Engine& e, Comm& comm, const plan::Job& job, const util::Deadline& d, const plan::CallInfo& info);
void nccl_broadcast(Engine& e, Comm& comm, const plan::Job& job, const util::Deadline& d, const plan::CallInfo& info);
// One all-reduce over every replica of every rank: buffers[r] on
// devices[r] (devices[0] = the engine's), one NCCL rank each, enqueued in
// one group on each replica's stream (ReplicaSet::stream).
void nccl_replica_all_reduce(Engine& e, std::span<const int> devices, std::span<void* const> buffers,
                             const plan::Job& job, const util::Deadline& d, const plan::CallInfo& info);
// Reduce-scatter into `owners` even slices (util::even_slice): local rank s
// ends with slice s of the sum in out; and the matching all-gather.
void nccl_reduce_scatter(Engine& e, Comm& comm, const plan::Job& job, int owners, const util::Deadline& d,
                         const plan::CallInfo& info);
void nccl_all_gather(Engine& e, Comm& comm, const plan::Job& job, int owners, const util::Deadline& d,
                     const plan::CallInfo& info);

// psgpu.cpp: slice owners reduce on their GPU with strata's kernels; the
// bytes travel over MPI through pinned host buffers. Waits itself.
void psgpu_reduce_scatter(Engine& e, MPI_Comm comm, const plan::Job& job, int owners, const util::Deadline& d,
                          const plan::CallInfo& info);
void psgpu_all_gather(Engine& e, MPI_Comm comm, const plan::Job& job, int owners, const util::Deadline& d,
                      const plan::CallInfo& info);

// staged.cpp: a host algorithm on device data, chunk by chunk through pinned
// buffers, device-host copies overlapping the MPI transfers of other chunks.
// Waits itself.
void staged(Engine& e, MPI_Comm comm, Collective collective, const host::Algorithm& algorithm,
            const plan::Job& job, const util::Deadline& d, const plan::CallInfo& info);

// hierarchical.cpp: "a/b" all-reduce with a in {nccl, psgpu} inside the node
// and b across nodes: nccl when `cross` is null, else that host algorithm
// via staged().
void hierarchical_all_reduce(Engine& e, std::string_view intra, const host::Algorithm* cross, const plan::Job& job,
                             const util::Deadline& d, const plan::CallInfo& info);

}  // namespace strata::nccl
