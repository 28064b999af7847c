// Shared bits of the GPU tests: the skip rule (exit 77 when no CUDA device
// is usable, checked with cudaGetDeviceCount through the backend seam) and
// deterministic test data that reduces exactly in every dtype.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

#include "gpu/plugin.hpp"

namespace strata::gpu_test {

inline constexpr int kSkip = 77;

// Call first in main (before MPI_Init is fine): exits 77 with the reason.
inline void skip_without_device(const char* program) {
  std::string why;
  if (!gpu::device_available(&why)) {
    std::printf("%s: SKIP: no CUDA device: %s\n", program, why.c_str());
    std::exit(kSkip);
  }
}

}  // namespace strata::gpu_test
