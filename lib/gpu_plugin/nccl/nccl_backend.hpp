// The GPU plugin's Backend (gpu/backend.hpp): the device primitives over
// one rank's Engine, with the batch primitives' packing (nccl/packer.hpp)
// and replica decision (nccl/replica_devices.hpp).
#pragma once

#include <mpi.h>

#include <memory>
#include <vector>

#include "gpu/backend.hpp"
#include "topo/gpu_plane.hpp"
#include "topo/node_split.hpp"

namespace strata::nccl {

// The plugin's side of gpu::make_backend (gpu/plugin.hpp): checks that a
// device is usable and that `device` exists (Unavailable otherwise), then
// makes the backend. Local: no communication.
std::unique_ptr<gpu::Backend> make_backend(MPI_Comm comm, const topo::NodeSplit& split, int device,
                                           std::vector<topo::GpuRow> rows);

}  // namespace strata::nccl
