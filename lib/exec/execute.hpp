// The execute stage: run one planned collective as the plan says (flat over
// the communicator, flat over the node's shared memory, or hierarchical),
// with the registered algorithms' levels (plan::Level): host levels over
// MPI and shared memory, GPU levels over the GPU backend's primitives
// (gpu::Levels). It decides nothing: plan::choose made every choice (and
// plan::replica_path a batch's replica path), and the one hierarchical
// driver (exec/hierarchical.hpp) serves both memories.
#pragma once

#include <mpi.h>

#include "gpu/backend.hpp"
#include "gpu/levels.hpp"
#include "host/shm_segment.hpp"
#include "plan/choose.hpp"
#include "plan/fingerprint.hpp"
#include "plan/job.hpp"
#include "plan/numerics.hpp"
#include "topo/gpu_plane.hpp"
#include "topo/node_split.hpp"
#include "util/arena.hpp"
#include "util/deadline.hpp"
#include "util/workspace.hpp"

namespace strata::exec {

// What host collectives of one communicator run over.
struct HostContext {
  MPI_Comm comm = MPI_COMM_NULL;  // the communicator's private duplicate
  int rank = 0;
  int size = 1;
  const topo::NodeSplit* split = nullptr;
  host::ShmSegment* segment = nullptr;  // over split->node; null when the node has one rank
  util::Workspace* workspace = nullptr;
  // Where receives into the caller's buffers land first when a call has a
  // deadline (host::Transport), and where the call check's MPI buffers live.
  // Reset after each call, abandoned (never freed) after a failed one.
  util::Arena* landing = nullptr;
  // How reductions round (Config::reproducible, Config::accumulate_f32).
  plan::Numerics numerics;
};

// Runs `job` (count > 0) with `choice` (a host choice from plan::choose),
// start to finish: mean runs as sum and is divided by `contributors` where
// the result lands (exec/finish.hpp). With `check`, first makes sure every
// rank makes the same call (exec/verify.hpp) — inside the first
// shared-memory round when the plan is flat over shared memory, so it
// costs nothing extra. Sums that context.numerics widens or sums exactly
// run through exec/reproducible.hpp. Throws Mismatch (every rank, nothing sent),
// DeadlineExceeded, BackendError.
void run_host(Collective collective, const plan::Choice& choice, const plan::Job& job, std::size_t contributors,
              const HostContext& context, const util::Deadline& deadline, const plan::CallInfo& info,
              const plan::Fingerprint* check = nullptr);

// run_host's plan alone: `job.op` a level op (mean already made sum), no
// finish, no numerics transform (exec/reproducible.hpp runs it).
void run_host_plan(Collective collective, const plan::Choice& choice, const plan::Job& job,
                   const HostContext& context, const util::Deadline& deadline, const plan::CallInfo& info,
                   const plan::Fingerprint* check);

// What a call on CUDA tensors runs over.
struct GpuContext {
  gpu::Backend* backend = nullptr;
  gpu::Levels* levels = nullptr;          // the levels made over `backend`
  const topo::NodeSplit* split = nullptr;
  const topo::GpuPlane* plane = nullptr;  // the control plane's verdicts
  int rank = 0;                           // in the communicator (decides who holds a rooted result)
  int size = 1;                           // of the communicator
};

// One collective on CUDA tensors: refuses a plan whose NCCL levels the
// control plane forbids (Unavailable, the same text on every rank, before
// any work); opens the call (ordered after call.producer, or in its graph),
// runs the plan's levels, finishes (mean: the backend's divide hook, where
// the result lands), then, as call.mode says, waits until the result is in
// job.out (blocking: returns no fence) or returns the fence after the work
// (ordered; none when captured), and closes the call. `job.op` may be mean;
// `contributors` is its divisor. A timeout or a backend failure marks the
// backend broken.
gpu::Fence run_gpu(Collective collective, const plan::Choice& choice, const plan::Job& job, std::size_t contributors,
                   const GpuContext& context, const gpu::CallContext& call);

// One pack of a batch on CUDA tensors: packs every replica, then on the
// path plan::replica_path gives either combines the replicas, runs the plan
// as run_gpu does on the packed buffer, finishes and spreads the result to
// the replicas, or runs one all-reduce over every replica of every rank and
// finishes each; unpacks where the pack lands; ends as run_gpu does. `op`
// may be mean; job fields other than in/out/count are as for run_gpu.
gpu::Fence run_gpu_pack(Collective collective, const plan::Choice& choice, const gpu::GpuPack& pack,
                        const plan::Job& proto, std::size_t contributors, const GpuContext& context,
                        const gpu::CallContext& call);

}  // namespace strata::exec
