#include "util/where.hpp"

#include <mpi.h>
#include <unistd.h>

#include <fmt/format.h>

namespace strata::util {

std::string hostname() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "unknown-host";
  return name;
}

int world_rank() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized) return -1;
  int rank = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return rank;
}

std::string where() {
  const int rank = world_rank();
  return rank < 0 ? fmt::format("{}:?", hostname()) : fmt::format("{}:{}", hostname(), rank);
}

}  // namespace strata::util
