#include "util/where.hpp"

#include <mpi.h>
#include <unistd.h>

#include <fstream>

#include <fmt/format.h>

namespace strata::util {

std::string hostname() {
  char name[256] = {};
  if (gethostname(name, sizeof name - 1) != 0) return "unknown-host";
  return name;
}

std::string boot_id() {
  // Fixed while the kernel runs: read once per process (each communicator's
  // topology asks for it twice, as the machine and inside host_identity).
  static const std::string id = [] {
    std::ifstream boot("/proc/sys/kernel/random/boot_id");
    std::string token;
    boot >> token;
    return token;
  }();
  return id;
}

int world_rank() {
  int initialized = 0, finalized = 0, rank = -1;
  if (MPI_Initialized(&initialized) != MPI_SUCCESS || MPI_Finalized(&finalized) != MPI_SUCCESS) return -1;
  if (!initialized || finalized) return -1;
  if (MPI_Comm_rank(MPI_COMM_WORLD, &rank) != MPI_SUCCESS) return -1;
  return rank;
}

std::string where() {
  const int rank = world_rank();
  return rank < 0 ? fmt::format("{}:?", hostname()) : fmt::format("{}:{}", hostname(), rank);
}

namespace {
constexpr std::string_view kLocated = "strata [";
}  // namespace

std::string located(std::string_view message) {
  if (message.starts_with(kLocated)) return std::string(message);
  return fmt::format("strata [{}]: {}", where(), message);
}

std::string_view unlocated(std::string_view message) {
  if (!message.starts_with(kLocated)) return message;
  const std::size_t end = message.find("]: ");
  return end == std::string_view::npos ? message : message.substr(end + 3);
}

}  // namespace strata::util
