// The GPU seam (gpu/plugin.hpp) inside libstrata_mpi_abi.so: host only.
// The GPU plugin, libstrata_gpu.so, is built against libstrata.so and the
// MPI of the build (its own ABI, another libmpi), so loading it into a
// program that runs the standard ABI would bring a second MPI library into
// the process. The interposer routes host buffers only (a CUDA-aware MPI
// is not routed at all), so here strata sees no CUDA device.
#include "gpu/plugin.hpp"

#include <fmt/format.h>

#include "strata/errors.hpp"
#include "util/where.hpp"

namespace strata::gpu {
namespace {

constexpr const char* kHostOnly =
    "libstrata_mpi_abi.so (the standard-ABI interposer) runs strata on host buffers only: the GPU plugin is built "
    "against the MPI of strata's own build, not the standard ABI";

}  // namespace

bool built() { return false; }

bool device_available(std::string* why) {
  if (why) *why = kHostOnly;
  return false;
}

topo::CudaProbe probe_devices() { return {{}, {}, kHostOnly}; }

Capture capture_status(void*) { return Capture::none; }

void relax_capture_checks() {}

std::unique_ptr<Backend> make_backend(MPI_Comm, const topo::NodeSplit&, int, std::vector<topo::GpuRow>) {
  throw Unavailable(fmt::format("strata [{}]: CUDA tensors are unavailable: {}", util::where(), kHostOnly));
}

}  // namespace strata::gpu
