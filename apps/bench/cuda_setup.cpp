// Collective decisions for --memory cuda (see cuda_setup.hpp).
#include "cuda_setup.hpp"

#include <fmt/format.h>

#include <array>
#include <cstdlib>
#include <cstring>

#include "cuda_buffers.hpp"

namespace bench {
namespace {

std::string host_name() {
  char name[MPI_MAX_PROCESSOR_NAME] = {};
  int length = 0;
  MPI_Get_processor_name(name, &length);
  return name;
}

// Every rank's `text` (truncated to 255 bytes), indexed by rank. Collective.
std::vector<std::string> all_gather(MPI_Comm comm, const std::string& text) {
  int size = 1;
  MPI_Comm_size(comm, &size);
  constexpr std::size_t kWidth = 256;
  std::array<char, kWidth> mine{};
  std::strncpy(mine.data(), text.c_str(), kWidth - 1);
  std::vector<char> all(kWidth * static_cast<std::size_t>(size));
  MPI_Allgather(mine.data(), kWidth, MPI_CHAR, all.data(), kWidth, MPI_CHAR, comm);
  std::vector<std::string> out;
  for (int r = 0; r < size; ++r) out.emplace_back(&all[kWidth * static_cast<std::size_t>(r)]);
  return out;
}

}  // namespace

std::optional<std::string> agree_no_device(MPI_Comm comm, int* device_count) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  std::string why;
  const int count = cuda::device_count(&why);
  // The same binary on every rank: all of them take this branch together.
  if (!cuda::built()) return why;
  int lacking = count > 0 ? 0 : 1;
  int first = count > 0 ? size : rank;
  MPI_Allreduce(MPI_IN_PLACE, &lacking, 1, MPI_INT, MPI_SUM, comm);
  MPI_Allreduce(MPI_IN_PLACE, &first, 1, MPI_INT, MPI_MIN, comm);
  if (lacking == 0) {
    *device_count = count;
    return std::nullopt;
  }
  // The lowest rank without a device tells everyone why (rank 0 prints it).
  std::array<char, 1024> text{};
  if (rank == first) std::strncpy(text.data(), fmt::format("{}: {}", host_name(), why).c_str(), text.size() - 1);
  MPI_Bcast(text.data(), static_cast<int>(text.size()), MPI_CHAR, first, comm);
  if (lacking == size) return fmt::format("no rank has a usable CUDA device (rank {} on {})", first, text.data());
  return fmt::format("{} of {} ranks have no usable CUDA device (rank {} on {})", lacking, size, first, text.data());
}

int choose_device(const strata::Topology& topology, int rank, int device_count) {
  const auto& info = topology.ranks.at(static_cast<std::size_t>(rank));
  // The library's assignment wins whenever it made one: strata only accepts
  // tensors on the device it drives.
  if (info.gpu.cuda_device >= 0) return info.gpu.cuda_device;
  // -1 with devices present: STRATA_GPU_MAP is unusable (gpu.how says why);
  // strata's first CUDA call then raises Unavailable with that reason on
  // every rank. Allocate somewhere so that the call gets to say it.
  return device_count > 0 ? info.local_rank % device_count : 0;
}

std::vector<int> gather_devices(MPI_Comm comm, int device) {
  int size = 1;
  MPI_Comm_size(comm, &size);
  std::vector<int> devices(static_cast<std::size_t>(size));
  MPI_Allgather(&device, 1, MPI_INT, devices.data(), 1, MPI_INT, comm);
  return devices;
}

// The host as NCCL's duplicate-GPU check keys it: NCCL_HOSTID when set
// (gpu-check sets one per rank to run NCCL on a one-GPU machine), else the
// processor name.
std::string nccl_host() {
  const char* id = std::getenv("NCCL_HOSTID");
  return id && *id ? std::string(id) : host_name();
}

std::optional<std::string> shared_gpu(MPI_Comm comm, int device) {
  const std::string host = nccl_host();
  const std::vector<std::string> hosts = all_gather(comm, host);
  const std::vector<std::string> gpus = all_gather(comm, cuda::pci_bus_id(device));
  for (std::size_t a = 0; a < gpus.size(); ++a)
    for (std::size_t b = a + 1; b < gpus.size(); ++b)
      if (hosts[a] == hosts[b] && gpus[a] == gpus[b])
        return fmt::format("ranks {} and {} both drive GPU {} on {}, and NCCL takes one rank per GPU: run at most "
                           "one rank per GPU with --baseline nccl",
                           a, b, gpus[a], hosts[a]);
  return std::nullopt;
}

std::optional<std::string> simulated_device(MPI_Comm comm, int device) {
  // A mix of real and simulated devices cannot happen in one job in
  // practice; if it did, the slowest (simulated) rank would set every time,
  // so no figure would be a GPU's either.
  const std::vector<std::string> names = all_gather(comm, cuda::device_name(device));
  for (const auto& name : names)
    if (name.find("simulated") != std::string::npos) return name;
  return std::nullopt;
}

}  // namespace bench
