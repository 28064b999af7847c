// All-gather of device slices over MPI through pinned host memory: the
// second half of psgpu, and the all-gather of host algorithms run on CUDA
// data (gpu/staged.hpp). Needs no NCCL, so it works where ranks share a GPU.
#pragma once

#include <mpi.h>

#include "gpu/backend.hpp"
#include "plan/job.hpp"

namespace strata::gpu {

// Member s < owners holds slice s (util::owner_slice) of job.out on its
// device; afterwards every member of `comm` holds every slice there. Waits
// for its copies itself (within the open call's deadline).
void pinned_all_gather(Backend& backend, MPI_Comm comm, const plan::Job& job, int owners);

}  // namespace strata::gpu
