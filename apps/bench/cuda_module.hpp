// The boundary between strata-bench and strata-bench-cuda.so, the module
// that holds every CUDA runtime and NCCL call the bench makes
// (cuda_buffers.cpp, cuda_streams.cpp, busy_kernel.cu, nccl_baseline.cpp). The executable links neither
// libcudart nor libnccl: it dlopens the module the first time --memory cuda
// needs it (cuda_loader.cpp), so that the same strata-bench starts, and
// benchmarks host memory, on a node without the CUDA runtime.
//
// Both sides are built together by one compiler from one tree, so the table
// passes C++ types (std::string, std::unique_ptr, exceptions derived from
// std::exception) as they are; kModuleAbi catches a module left over from
// another build.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <memory>
#include <string>

#include "cuda_buffers.hpp"
#include "nccl_baseline.hpp"

namespace bench::cuda {

// Bump whenever Module changes.
inline constexpr int kModuleAbi = 2;
// The module's file name, in the build tree next to strata-bench and
// installed in <libdir>/strata (meson.build).
inline constexpr const char* kModuleFile = "strata-bench-cuda.so";
// The one symbol the module exports (extern "C", below).
inline constexpr const char* kModuleEntry = "strata_bench_cuda_module";

// The module's implementations of cuda_buffers.hpp and nccl_baseline.hpp;
// each has the contract of the function of the same name there.
struct Module {
  int abi = 0;  // kModuleAbi of the build that made the module
  int (*device_count)(std::string* why) = nullptr;
  void (*set_device)(int device) = nullptr;
  std::string (*pci_bus_id)(int device) = nullptr;
  std::string (*device_name)(int device) = nullptr;
  std::unique_ptr<DeviceMemory> (*device_memory)(int device) = nullptr;
  CopyBandwidth (*pinned_copy_bandwidth)(int device, std::size_t bytes, int iters) = nullptr;
  std::unique_ptr<DeviceStream> (*device_stream)(int device) = nullptr;
  std::unique_ptr<NcclBaseline> (*nccl_baseline)(MPI_Comm comm, int device) = nullptr;
};

// Inside the module: --baseline nccl's implementation (nccl_baseline.cpp)
// and the streams (cuda_streams.cpp), which the entry point's table points
// at.
std::unique_ptr<NcclBaseline> open_nccl_baseline(MPI_Comm comm, int device);
std::unique_ptr<DeviceStream> open_device_stream(int device);

}  // namespace bench::cuda

// The module's entry point (cuda_buffers.cpp): its table, valid for as long
// as the module stays loaded (the bench never unloads it). Never throws.
extern "C" const bench::cuda::Module* strata_bench_cuda_module();
