// The state behind a strata::Communicator and the execute stage every entry
// point (and the TF-named facades) funnels into. Internal header.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/breaking.hpp"
#include "core/deadline.hpp"
#include "core/workspace.hpp"
#include "gpu/backend.hpp"
#include "host/algorithm.hpp"
#include "host/shm_segment.hpp"
#include "plan/select.hpp"
#include "plan/spec.hpp"
#include "strata/communicator.hpp"
#include "strata/topology.hpp"
#include "topo/node_split.hpp"

namespace strata {

struct Communicator::Impl {
  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0;
  int size = 1;
  Config config;
  plan::Spec spec;
  core::Workspace workspace;  // algorithm scratch
  core::Workspace staging;    // pack staging (batch and per-replica calls)
  std::uint64_t sequence = 0;
  std::string broken_reason;  // non-empty once broken
  topo::NodeSplit split;      // nodes, from construction
  Topology topology;          // from construction, after split
  // Over split.node when it has more than one rank, from construction: its
  // creation is collective and unbounded, so it must not happen inside a
  // call that has a deadline.
  std::unique_ptr<host::ShmSegment> segment;

  std::unique_ptr<gpu::Backend> gpu;  // created by the first call on CUDA tensors

  // The GPU backend, created on first use on the rank's assigned device
  // (topology.ranks[rank].gpu). Collective the first time (every rank makes
  // the same call on CUDA tensors): the ranks agree first, bounded by
  // `deadline`, so that when any rank cannot use a GPU (host-only build, no
  // device, bad STRATA_GPU_MAP) every rank throws Unavailable naming that
  // rank and its reason, and none is left waiting in NCCL's setup.
  gpu::Backend& gpu_backend(const core::Deadline& deadline, std::string_view collective);

  // execute() for CUDA tensors: the spec entry by size ("nccl" for auto or
  // implementation = nccl, "xring" for ring) goes to the backend, which
  // divides mean itself.
  void execute_gpu(Collective collective, host::Job job, int device, const CommunicationOptions& options,
                   const core::Deadline& deadline, std::size_t contributors, const plan::Spec* spec = nullptr);

  // The last plan, reused while calls repeat (the common case in training
  // loops): selection is a spec walk and name lookups, worth skipping on
  // the latency path.
  struct LastChoice {
    const plan::Spec* spec = nullptr;
    Collective collective = Collective::all_reduce;
    std::size_t bytes = 0;
    Implementation implementation = Implementation::automatic;
    plan::Choice choice;
  } last_choice;

  ~Impl();

  // Throws PeerFailure once broken.
  void ensure_usable() const;

  // Run one validated collective. `job.op` may be mean: the algorithm runs
  // sum and the result is divided by `contributors` where it lands.
  // `spec` = nullptr uses the communicator's spec.
  void execute(plan::Collective collective, host::Job job, const CommunicationOptions& options,
               const core::Deadline& deadline, std::size_t contributors, const plan::Spec* spec = nullptr);

  // A batch of logical tensors, each given as one tensor per local replica
  // (batch[k][r]; the same replica count on every rank), reduced across all
  // replicas of all ranks. collective is all_reduce (every replica of every
  // rank gets the result) or reduce (every replica on `root`). Packs per
  // `packing`; `on_pack_done(i)` after pack i's results are in place.
  // Inputs must be validated.
  void run_batch(plan::Collective collective, const std::vector<std::vector<Tensor>>& batch, ReduceOp op, int root,
                 const PackingOptions& packing, const CommunicationOptions& options, const plan::Spec* spec,
                 const std::function<void(std::size_t)>& on_pack_done);

  // run_batch for CUDA tensors, and the facades' broadcast of CUDA
  // replicas: packs per `packing` (automatic: one pack per dtype), each
  // one GpuPack for the backend, which combines local replicas (several
  // GPUs per rank), runs the spec's algorithm for the pack's size and, where
  // `lands_here`, returns the result into every replica. collective may be
  // broadcast (from `root`'s replica 0). Inputs must be validated.
  void run_batch_gpu(Collective collective, const std::vector<std::vector<Tensor>>& batch, ReduceOp op, int root,
                     bool lands_here, const PackingOptions& packing, const CommunicationOptions& options,
                     const plan::Spec* spec, const std::function<void(std::size_t)>& on_pack_done);

  void mark_broken(const char* reason);

  // Runs `work` (one collective's transfers); a timeout or a backend failure
  // marks the communicator broken before the exception goes on.
  template <typename Work>
  void breaking_on_failure(Work&& work) {
    core::breaking_on_failure(work, [this](const char* what) { mark_broken(what); });
  }
};

// The spec entry a call on CUDA tensors runs: "nccl" for auto or
// implementation = nccl, "xring" for ring, else the spec's entry by size.
plan::SpecEntry gpu_entry(const plan::Spec& spec, std::size_t bytes, Implementation implementation);

// The Impl of a Communicator, for the facades in lib/core.
Communicator::Impl& impl_of(Communicator& comm);

}  // namespace strata
