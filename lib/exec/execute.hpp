// The execute stage for host memory: run one planned collective as the plan
// says (flat over the communicator, flat over the node's shared memory, or
// hierarchical), with the registered algorithm's code. It decides nothing:
// plan::choose made every choice.
#pragma once

#include <mpi.h>

#include "host/algorithm.hpp"
#include "host/shm_segment.hpp"
#include "plan/choose.hpp"
#include "plan/fingerprint.hpp"
#include "plan/job.hpp"
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
};

// Runs `job` (count > 0, op != mean) with `choice` (a host choice from
// plan::choose). With `check`, first makes sure every rank makes the same
// call (exec/verify.hpp) — inside the first shared-memory round when the
// plan is the flat shared-memory all-reduce, so it costs nothing extra.
// Throws Mismatch (every rank, nothing sent), DeadlineExceeded, BackendError.
void run_host(Collective collective, const plan::Choice& choice, const plan::Job& job, const HostContext& context,
              const util::Deadline& deadline, const plan::CallInfo& info, const plan::Fingerprint* check = nullptr);

// CUDA memory: the host algorithm the GPU backend runs through pinned
// copies for `choice` (gpu::GpuJob::host_algorithm): the flat algorithm
// when it is a host one, else a host cross-node level; null otherwise.
const host::Algorithm* staged_level(const plan::Choice& choice);

}  // namespace strata::exec
