// The GPU seam in host-only builds (-Dcuda=disabled, or CUDA/NCCL not found
// at configure time): same API, no device, every backend request refused
// with strata::Unavailable.
#include "gpu/backend.hpp"
#include "strata/errors.hpp"

namespace strata::gpu {

namespace {
constexpr const char* kWhy =
    "this build of strata has no GPU backend (configured with -Dcuda=disabled, or nvcc/NCCL were not found); "
    "rebuild with -Dcuda=enabled on a machine with the CUDA toolkit and NCCL, or pass host tensors";

[[noreturn]] void refuse() { throw Unavailable(std::string("strata: CUDA tensors are unavailable: ") + kWhy); }
}  // namespace

bool built() { return false; }

bool device_available(std::string* why) {
  if (why) *why = kWhy;
  return false;
}

topo::CudaProbe probe_devices() { return {{}, {}, kWhy}; }

std::unique_ptr<Backend> make_backend(MPI_Comm, const topo::NodeSplit&, int, std::vector<topo::GpuRow>) { refuse(); }

std::unique_ptr<plan::Level> make_nccl_level(Backend&, plan::Group) { refuse(); }
std::unique_ptr<plan::Level> make_psgpu_level(Backend&, plan::Group) { refuse(); }

}  // namespace strata::gpu
