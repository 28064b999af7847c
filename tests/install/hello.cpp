// The smallest strata application: built against the installed headers and
// library only (see check_install.sh), it all-reduces one vector and checks
// the result, so a broken install (missing header, bad pkg-config file,
// unresolved symbol) fails here rather than in a user's build.
#include <mpi.h>
#include <strata/strata.hpp>

#include <cstdio>
#include <vector>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int status = 0;
  {
    strata::Communicator comm(MPI_COMM_WORLD);
    const int n = comm.size();
    std::vector<float> data(1000, static_cast<float>(comm.rank() + 1));
    comm.all_reduce({data.data(), data.size(), strata::DataType::f32}, {data.data(), data.size(), strata::DataType::f32},
                    strata::ReduceOp::sum);
    const float want = static_cast<float>(n * (n + 1) / 2);
    for (float v : data)
      if (v != want) status = 1;
    std::printf("strata %s rank %d of %d: all_reduce %s\n", strata::version, comm.rank(), n, status ? "WRONG" : "ok");
  }
  MPI_Finalize();
  return status;
}
