// Which CUDA device each local rank gets (lib/topo/gpu_map): STRATA_GPU_MAP,
// nearest by NUMA domain, a GPU of its own before any is shared, round
// robin, and the cases with no CUDA device. Pure functions: no GPU needed.
#include <doctest/doctest.h>
#include <fmt/format.h>

#include <string>
#include <vector>

#include "strata/errors.hpp"
#include "topo/gpu_map.hpp"

using namespace strata;
using topo::assign_gpu;

namespace {

// A two-socket box: GPUs 0,1 on NUMA 0 and 2,3 on NUMA 1 (hwloc, lower case).
const std::vector<GpuInfo> kGpus = {
    {"0000:1b:00.0", 0}, {"0000:3b:00.0", 0}, {"0000:86:00.0", 1}, {"0000:af:00.0", 1}};
// CUDA enumerates fastest-first, not in PCI order, and in upper case.
const std::vector<std::string> kCuda = {"0000:86:00.0", "0000:1B:00.0", "0000:AF:00.0", "0000:3B:00.0"};

int device_of(const std::vector<std::vector<int>>& numa, int local, const std::vector<std::string>& cuda = kCuda,
              std::string_view map = "") {
  return assign_gpu({kGpus, numa}, local, cuda, map).cuda_device;
}

}  // namespace

TEST_CASE("parse_gpu_map accepts index lists and rejects anything else, naming the variable") {
  CHECK(topo::parse_gpu_map("").empty());
  CHECK(topo::parse_gpu_map("0,1,3") == std::vector<int>{0, 1, 3});
  CHECK(topo::parse_gpu_map("7") == std::vector<int>{7});
  for (const char* bad : {"0,,1", "a", "-1", "1,", "1 2", ",0", "0x1"}) {
    CAPTURE(bad);
    try {
      topo::parse_gpu_map(bad);
      FAIL("accepted");
    } catch (const InvalidArgument& e) {
      CHECK(std::string(e.what()).find("STRATA_GPU_MAP") != std::string::npos);
    }
  }
}

TEST_CASE("ranks bound to one socket each get a different GPU of that socket") {
  // Local ranks 0,1 on NUMA 0, ranks 2,3 on NUMA 1.
  const std::vector<std::vector<int>> numa = {{0}, {0}, {1}, {1}};
  // NUMA 0 GPUs in CUDA order: 1 (1b), 3 (3b); NUMA 1: 0 (86), 2 (af).
  CHECK(device_of(numa, 0) == 1);
  CHECK(device_of(numa, 1) == 3);
  CHECK(device_of(numa, 2) == 0);
  CHECK(device_of(numa, 3) == 2);
  const GpuAssignment a = assign_gpu({kGpus, numa}, 2, kCuda, "");
  CHECK(a.pci_bus_id == "0000:86:00.0");
  CHECK(a.how == "nearest: NUMA 1");
}

TEST_CASE("interleaved binding (round-robin placement) still gives distinct nearest GPUs") {
  const std::vector<std::vector<int>> numa = {{0}, {1}, {0}, {1}};
  std::vector<int> got;
  for (int local = 0; local < 4; ++local) got.push_back(device_of(numa, local));
  CHECK(got == std::vector<int>{1, 0, 3, 2});
}

TEST_CASE("unbound ranks (all NUMA domains) share all GPUs out in order") {
  const std::vector<std::vector<int>> numa = {{0, 1}, {0, 1}, {0, 1}, {0, 1}, {0, 1}};
  std::vector<int> got;
  for (int local = 0; local < 5; ++local) got.push_back(device_of(numa, local));
  CHECK(got == std::vector<int>{0, 1, 2, 3, 0});  // more ranks than GPUs: sharing starts again
  CHECK(assign_gpu({kGpus, numa}, 1, kCuda, "").how.find("shares") == std::string::npos);
  CHECK(assign_gpu({kGpus, numa}, 4, kCuda, "").how.find("shares it with local rank 0: 5 local ranks on 4 GPUs") !=
        std::string::npos);
}

TEST_CASE("eight ranks bound to NUMA 0 of an 8-GPU node get eight GPUs, NUMA 0's first") {
  // GPUs 0-3 on NUMA 0 and 4-7 on NUMA 1; ranks bound to cores and mapped
  // by core (Open MPI's default at this size) all sit on the first socket.
  std::vector<GpuInfo> gpus;
  std::vector<std::string> cuda;
  for (int g = 0; g < 8; ++g) {
    gpus.push_back({fmt::format("0000:{:02x}:00.0", 0x10 * (g + 1)), g < 4 ? 0 : 1});
    cuda.push_back(gpus.back().pci_bus_id);
  }
  const std::vector<std::vector<int>> numa(8, std::vector<int>{0});
  for (int local = 0; local < 8; ++local) {
    CAPTURE(local);
    const GpuAssignment a = assign_gpu({gpus, numa}, local, cuda, "");
    CHECK(a.cuda_device == local);  // eight distinct devices, the near ones to the first ranks
    CHECK(a.how.find("shares") == std::string::npos);
    if (local < 4) CHECK(a.how == "nearest: NUMA 0");
    else CHECK(a.how == "elsewhere: NUMA 1 (the GPUs on the rank's NUMA domains went to local ranks 0-3)");
  }
  // Nine ranks: one GPU must serve two. The spare place goes to a near GPU
  // (local ranks 0 and 4 share GPU 0), and every other GPU keeps one rank.
  const std::vector<std::vector<int>> nine(9, std::vector<int>{0});
  std::vector<int> got;
  for (int local = 0; local < 9; ++local) got.push_back(assign_gpu({gpus, nine}, local, cuda, "").cuda_device);
  CHECK(got == std::vector<int>{0, 1, 2, 3, 0, 4, 5, 6, 7});
  CHECK(assign_gpu({gpus, nine}, 4, cuda, "").how ==
        "nearest: NUMA 0; shares it with local rank 0: 9 local ranks on 8 GPUs (NCCL cannot run between ranks that "
        "share a GPU)");
  CHECK(assign_gpu({gpus, nine}, 5, cuda, "").how.find("shares") == std::string::npos);
}

TEST_CASE("more local ranks than GPUs: ranks share, near ones together, and `how` says with whom and why") {
  // Two GPUs, one per socket; four ranks bound to the sockets in halves.
  const std::vector<GpuInfo> gpus = {{"0000:1b:00.0", 0}, {"0000:86:00.0", 1}};
  const std::vector<std::string> cuda = {"0000:1B:00.0", "0000:86:00.0"};
  const std::vector<std::vector<int>> numa = {{0}, {0}, {1}, {1}};
  std::vector<int> got;
  for (int local = 0; local < 4; ++local) got.push_back(assign_gpu({gpus, numa}, local, cuda, "").cuda_device);
  CHECK(got == std::vector<int>{0, 0, 1, 1});
  const GpuAssignment first = assign_gpu({gpus, numa}, 0, cuda, "");
  CHECK(first.how ==
        "nearest: NUMA 0; shares it with local rank 1: 4 local ranks on 2 GPUs (NCCL cannot run between ranks "
        "that share a GPU)");
  const GpuAssignment last = assign_gpu({gpus, numa}, 3, cuda, "");
  CHECK(last.how.find("shares it with local rank 2: 4 local ranks on 2 GPUs") != std::string::npos);
}

TEST_CASE("ranks that see different CUDA devices (one CUDA_VISIBLE_DEVICES each) keep their own") {
  const std::vector<std::vector<int>> numa = {{0}, {0}, {1}, {1}};
  // Local rank l sees only kGpus[l], as CUDA device 0.
  std::vector<std::vector<std::string>> seen;
  for (const GpuInfo& gpu : kGpus) seen.push_back({gpu.pci_bus_id});
  for (int local = 0; local < 4; ++local) {
    CAPTURE(local);
    const GpuAssignment a = assign_gpu({kGpus, numa, seen}, local, seen[std::size_t(local)], "");
    CHECK(a.cuda_device == 0);
    CHECK(a.pci_bus_id == kGpus[std::size_t(local)].pci_bus_id);
    CHECK(a.how.find("shares") == std::string::npos);
  }
  // Two ranks given the same single device share it, and say why: fewer
  // distinct devices than ranks, or overlapping sets while a device sits idle.
  seen[1] = seen[0];
  GpuAssignment a = assign_gpu({kGpus, numa, seen}, 1, seen[1], "");
  CHECK(a.pci_bus_id == kGpus[0].pci_bus_id);
  CHECK(a.how.find("shares it with local rank 0: 4 local ranks on 3 GPUs") != std::string::npos);
  const std::vector<std::vector<std::string>> overlap = {seen[0], seen[0], {kCuda[0], kCuda[2]}};
  const std::vector<std::vector<int>> three = {{0}, {0}, {1}};
  a = assign_gpu({kGpus, three, overlap}, 0, overlap[0], "");
  CHECK(a.how.find("shares it with local rank 1: the CUDA devices their processes see overlap") != std::string::npos);
  CHECK(assign_gpu({kGpus, three, overlap}, 2, overlap[2], "").cuda_device == 0);  // on NUMA 1, its own
}

TEST_CASE("without hwloc GPU information the choice is round robin over CUDA devices") {
  const std::vector<std::vector<int>> numa = {{0}, {0}, {0}};
  for (int local = 0; local < 3; ++local) {
    const GpuAssignment a = assign_gpu({{}, numa}, local, kCuda, "");
    CHECK(a.cuda_device == local);
    CHECK(a.how.find("round robin") == 0);
  }
}

TEST_CASE("STRATA_GPU_MAP wins, and its errors are kept as the reason instead of thrown") {
  const std::vector<std::vector<int>> numa = {{0}, {0}};
  CHECK(device_of(numa, 0, kCuda, "3,2") == 3);
  CHECK(device_of(numa, 1, kCuda, "3,2") == 2);
  CHECK(assign_gpu({kGpus, numa}, 1, kCuda, "3,2").how == "STRATA_GPU_MAP");
  CHECK(assign_gpu({kGpus, numa}, 1, kCuda, "3,2").pci_bus_id == "0000:af:00.0");

  const GpuAssignment short_map = assign_gpu({kGpus, numa}, 1, kCuda, "0");
  CHECK(short_map.cuda_device == -1);
  CHECK(short_map.how.find("local rank 1 needs one") != std::string::npos);
  const GpuAssignment too_big = assign_gpu({kGpus, numa}, 0, kCuda, "4");
  CHECK(too_big.cuda_device == -1);
  CHECK(too_big.how.find("sees 4 CUDA device") != std::string::npos);
  const GpuAssignment garbage = assign_gpu({kGpus, numa}, 0, kCuda, "zero");
  CHECK(garbage.cuda_device == -1);
  CHECK(garbage.how.find("'zero' is not a device index") != std::string::npos);
}

TEST_CASE("no CUDA device: no assignment, but hwloc's nearest GPU is named for strata-topo") {
  const std::vector<std::vector<int>> numa = {{1}};
  const GpuAssignment a = assign_gpu({kGpus, numa}, 0, {}, "");
  CHECK(a.cuda_device == -1);
  CHECK(a.pci_bus_id == "0000:86:00.0");
  CHECK(a.how.find("no CUDA device visible") == 0);
  const GpuAssignment none = assign_gpu({{}, numa}, 0, {}, "");
  CHECK(none.cuda_device == -1);
  CHECK(none.pci_bus_id.empty());
}
