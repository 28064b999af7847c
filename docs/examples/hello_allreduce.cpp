// The README's example: a mean all-reduce of one vector per rank.
#include <mpi.h>
#include <strata/strata.hpp>

#include <cstdio>
#include <vector>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  {
    strata::Communicator comm(MPI_COMM_WORLD);  // collective; dups the communicator
    std::vector<float> grad(1 << 20, float(comm.rank()));
    strata::Tensor t{grad.data(), grad.size(), strata::DataType::f32};
    comm.all_reduce(t, t, strata::ReduceOp::mean, {.timeout_seconds = 30});  // in place
    if (comm.rank() == 0) std::printf("mean of ranks = %g\n", grad[0]);
  }  // destroy the Communicator before MPI_Finalize
  MPI_Finalize();
}
