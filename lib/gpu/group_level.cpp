#include "gpu/group_level.hpp"

#include "util/check.hpp"

namespace strata::gpu {
namespace {

int rank_of(MPI_Comm comm) {
  int rank = 0;
  STRATA_CHECK_MPI(MPI_Comm_rank(comm, &rank));
  return rank;
}

int size_of(MPI_Comm comm) {
  int size = 1;
  STRATA_CHECK_MPI(MPI_Comm_size(comm, &size));
  return size;
}

}  // namespace

GroupLevel::GroupLevel(Backend& backend, plan::Group group)
    : backend_(backend), group_(group), mpi_(backend.mpi(group)), rank_(rank_of(mpi_)), size_(size_of(mpi_)) {}

void GroupLevel::copy(const plan::Job& job) {
  if (job.out != job.in && job.out) backend_.copy(job.out, job.in, job.bytes(), Copy::device_to_device);
}

}  // namespace strata::gpu
