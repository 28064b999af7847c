// Runs everywhere (suite gpu, also on machines without a GPU): the backend
// must report "unavailable" cleanly where there is no device, no GPU plugin
// that loads, or no CUDA build — no crash, a clear message,
// strata::Unavailable from make_backend. On a machine with a GPU it checks
// the opposite (the plugin loads and the backend comes up). With
// --expect-device it is the device case only: skipped (77) without one.
#include <mpi.h>

#include <cstdio>
#include <string>

#include "gpu/plugin.hpp"
#include "harness_core.hpp"
#include "strata/errors.hpp"
#include "strata/version.hpp"
#include "topo/discover.hpp"
#include "topo/node_split.hpp"

using strata::test::rank_check;

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  using namespace strata;
  test::start_program_checks("test_gpu_unavailable", 50);
  rank_check(gpu::built() == bool(STRATA_HAVE_CUDA), "gpu::built() matches STRATA_HAVE_CUDA");

  std::string why;
  const bool available = gpu::device_available(&why);
  std::printf("built: %d, device available: %d%s%s\n", int(gpu::built()), int(available), why.empty() ? "" : ", why: ",
              why.c_str());
  if (!available && argc > 1 && std::string(argv[1]) == "--expect-device") {
    std::printf("SKIP: --expect-device, and no CUDA device is usable here\n");
    MPI_Finalize();
    return 77;
  }
  if (!gpu::built()) rank_check(!available, "a host-only build never reports a device");
  if (!available) rank_check(!why.empty(), "unavailable comes with a reason");

  const topo::CudaProbe probe = gpu::probe_devices();
  rank_check(probe.problem.empty() == available, "probe_devices reports a problem exactly when no device is available");
  rank_check(probe.bus_ids.size() == probe.modes.size(), "probe_devices gives a compute mode per device");

  topo::NodeSplit split = topo::split_nodes(MPI_COMM_WORLD);
  try {
    auto backend = gpu::make_backend(MPI_COMM_WORLD, split, 0, {});
    rank_check(available, "make_backend succeeds only with a device");
    std::printf("backend drives device %d\n", backend->device());
  } catch (const Unavailable& e) {
    std::printf("make_backend: Unavailable: %s\n", e.what());
    rank_check(!available, "make_backend throws Unavailable only without a device");
    rank_check(std::string(e.what()).find("unavailable") != std::string::npos, "the message says unavailable");
  }

  topo::free_split(split);
  const int status = test::finish_program_checks();
  MPI_Finalize();
  return status;
}
