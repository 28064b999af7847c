// What every GPU level shares: the backend it enqueues on, the group's MPI
// communicator with this rank's place in it, and the local copy a group of
// one rank needs. The GPU algorithms (lib/gpu/<name>.cpp) and the staged
// host algorithms (gpu/staged.hpp) derive their levels from it.
#pragma once

#include <mpi.h>

#include "gpu/backend.hpp"
#include "plan/level.hpp"

namespace strata::gpu {

class GroupLevel : public plan::Level {
 public:
  // Over `group` of `backend` (which must outlive it): asks the group's
  // MPI communicator for this rank's place in it.
  GroupLevel(Backend& backend, plan::Group group);

  // job.out = job.in, device to device on the call's stream.
  void copy(const plan::Job& job) override;

 protected:
  Backend& backend_;
  plan::Group group_;
  MPI_Comm mpi_;  // the group's MPI communicator
  int rank_;      // in mpi_
  int size_;
};

}  // namespace strata::gpu
