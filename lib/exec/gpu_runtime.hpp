// The GPU side of one communicator: every rank's device row (gathered with
// the topology), the control plane's verdicts made from them (identical on
// every rank, topo/gpu_plane.hpp), and the GPU backend with its levels,
// created by the first call on CUDA tensors. Internal header.
#pragma once

#include <mpi.h>

#include <memory>
#include <vector>

#include "exec/execute.hpp"
#include "gpu/backend.hpp"
#include "gpu/levels.hpp"
#include "topo/gpu_plane.hpp"
#include "topo/node_split.hpp"

namespace strata::exec {

class GpuRuntime {
 public:
  GpuRuntime() = default;
  // `rows`: one per rank of the communicator; `plane`: the control plane's
  // verdicts decided from them (topo::decide).
  GpuRuntime(std::vector<topo::GpuRow> rows, topo::GpuPlane plane);
  GpuRuntime(const GpuRuntime&) = delete;
  GpuRuntime& operator=(const GpuRuntime&) = delete;
  GpuRuntime(GpuRuntime&&) = default;
  GpuRuntime& operator=(GpuRuntime&&) = default;

  const topo::GpuPlane& plane() const { return plane_; }
  // Rank `rank`'s row of the table.
  const topo::GpuRow& row(int rank) const { return rows_.at(static_cast<std::size_t>(rank)); }

  // The backend on this rank's assigned device, created the first time.
  // Creation is collective over `comm` (every rank makes the same call on
  // CUDA tensors): the ranks agree on its outcome within
  // topo::setup_seconds(), so a rank whose device fails makes every rank
  // raise the same error. Throws Unavailable (every rank, no message
  // exchanged) where the control plane ruled CUDA tensors out.
  gpu::Backend& backend(MPI_Comm comm, const topo::NodeSplit& split, int rank);

  // The backend, or null before the first call on CUDA tensors made it.
  gpu::Backend* made() const { return backend_.get(); }
  // Whether every level of `choice` this rank runs over `split` was made
  // already (the backend too): a call with this plan creates nothing.
  bool ready_for(const plan::Choice& choice, const topo::NodeSplit& split) const;

  // What a CUDA call's execution needs; backend() must have succeeded.
  GpuContext context(const topo::NodeSplit& split, int rank, int size);

  // Destroys the levels, then the backend (before the communicator they
  // were made over goes). Never throws.
  void reset() noexcept;

 private:
  std::vector<topo::GpuRow> rows_;
  topo::GpuPlane plane_;
  std::unique_ptr<gpu::Backend> backend_;
  std::unique_ptr<gpu::Levels> levels_;  // over backend_: declared after it, destroyed before it
};

}  // namespace strata::exec
