// Host-only builds (no nvcc, cudart or NCCL found, or -Dcuda=disabled): the
// same API as cuda_buffers.cpp and nccl_baseline.cpp. device_count() says
// why there is no device, so `--memory cuda` skips (exit 77) with that
// reason before anything below it can be reached.
#include <stdexcept>

#include "cuda_buffers.hpp"
#include "nccl_baseline.hpp"

namespace bench {
namespace cuda {
namespace {

[[noreturn]] void unreachable(const char* what) {
  throw std::logic_error(std::string(what) + ": this strata-bench was built without CUDA");
}

}  // namespace

bool built() { return false; }

int device_count(std::string* why) {
  if (why)
    *why = "this strata-bench was built without CUDA (meson found no nvcc, cudart or NCCL under -Dnvidia_root, or "
           "was configured with -Dcuda=disabled; `meson setup` prints what it found in its GPU section)";
  return 0;
}

void set_device(int) { unreachable("set_device"); }
std::string pci_bus_id(int) { unreachable("pci_bus_id"); }
std::unique_ptr<DeviceMemory> device_memory(int) { unreachable("device_memory"); }
CopyBandwidth pinned_copy_bandwidth(int, std::size_t, int) { unreachable("pinned_copy_bandwidth"); }

}  // namespace cuda

struct NcclBaseline::Impl {};

NcclBaseline::NcclBaseline(MPI_Comm, int) { cuda::unreachable("NcclBaseline"); }
NcclBaseline::~NcclBaseline() = default;
void NcclBaseline::run(CollectiveKind, const Context&, Buffers&) { cuda::unreachable("NcclBaseline::run"); }

}  // namespace bench
