// resident_blocks: one occupancy query per (kernel, device), cached.
#include <mutex>
#include <vector>

#include "gpu_plugin/cuda/check.hpp"
#include "gpu_plugin/cuda/launch.cuh"

namespace strata::cuda {

unsigned resident_blocks(const void* kernel) {
  struct Known {
    const void* kernel;
    int device;
    unsigned blocks;
  };
  static std::mutex mutex;
  static std::vector<Known> known;
  int device = 0;
  STRATA_CHECK_CUDA(cudaGetDevice(&device));
  const std::lock_guard<std::mutex> lock(mutex);
  for (const Known& k : known)
    if (k.kernel == kernel && k.device == device) return k.blocks;
  int per_sm = 0, sms = 0;
  STRATA_CHECK_CUDA(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kThreads, 0));
  STRATA_CHECK_CUDA(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  const unsigned blocks = unsigned(per_sm > 0 ? per_sm : 1) * unsigned(sms > 0 ? sms : 1);
  known.push_back({kernel, device, blocks});
  return blocks;
}

}  // namespace strata::cuda
