// strata-gpu-kernels: bandwidth of strata's CUDA kernels next to a
// device-to-device cudaMemcpy measured in the same run. Bandwidth counts
// memory traffic: copy and pack/unpack move 2 bytes per byte (read + write),
// reduce 3 (two reads, one write), divide 2. Target on an H100: every kernel
// at >= 90% of the copy's traffic bandwidth; the last line is the verdict.
//   strata-gpu-kernels [--bytes N] [--iters N]
// Exits 77 with the reason where no CUDA device is usable.
#include <cuda_runtime.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "gpu_plugin/cuda/kernels.hpp"
#include "gpu/plugin.hpp"
#include "options.hpp"

using namespace strata;

namespace {

constexpr int kExitUsage = 2, kExitError = 3, kExitSkip = 77;
constexpr double kTargetPercent = 90.0;

struct CudaError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

void check(cudaError_t rc, const char* call) {
  if (rc != cudaSuccess)
    throw CudaError(fmt::format("{} failed: {} ({})", call, cudaGetErrorName(rc), cudaGetErrorString(rc)));
}
#define CUDA_OK(call) check((call), #call)

// Mean time of one launch, ms: one warm-up, then `iters` back to back
// between two events (kernel throughput, as a bandwidth figure wants).
double time_ms(const std::function<void()>& body, int iters) {
  cudaEvent_t start, stop;
  CUDA_OK(cudaEventCreate(&start));
  CUDA_OK(cudaEventCreate(&stop));
  body();
  CUDA_OK(cudaEventRecord(start));
  for (int i = 0; i < iters; ++i) body();
  CUDA_OK(cudaEventRecord(stop));
  CUDA_OK(cudaEventSynchronize(stop));
  CUDA_OK(cudaGetLastError());  // a failed launch shows up here
  float ms = 0;
  CUDA_OK(cudaEventElapsedTime(&ms, start, stop));
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return double(ms) / iters;
}

void* device_buffer(std::size_t bytes) {
  void* p = nullptr;
  CUDA_OK(cudaMalloc(&p, bytes));
  return p;
}

int measure(const kernels_app::Options& options) {
  std::size_t bytes = options.bytes / 16 * 16;
  const int iters = options.iters;
  int device = 0;
  cudaDeviceProp prop{};
  CUDA_OK(cudaGetDevice(&device));
  CUDA_OK(cudaGetDeviceProperties(&prop, device));
  // A simulated device (the CUDA test double) runs kernels as host code:
  // its timings say nothing about a GPU's bandwidth.
  if (std::strstr(prop.name, "simulated")) {
    std::printf("strata-gpu-kernels: SKIP: device %d is simulated (%s): kernel bandwidth needs a real GPU\n", device,
                prop.name);
    return kExitSkip;
  }
  auto* a = static_cast<std::byte*>(device_buffer(bytes));
  auto* b = static_cast<std::byte*>(device_buffer(bytes));
  auto* c = static_cast<std::byte*>(device_buffer(bytes));
  CUDA_OK(cudaMemset(a, 0, bytes));
  CUDA_OK(cudaMemset(b, 0, bytes));

  std::printf("# device %d: %s, %zu bytes per buffer, %d iterations\n", device, prop.name, bytes, iters);
  std::printf("%-24s %10s %12s %10s\n", "kernel", "time(ms)", "traffic GB/s", "vs copy");
  const double copy_ms = time_ms([&] { CUDA_OK(cudaMemcpyAsync(c, a, bytes, cudaMemcpyDeviceToDevice)); }, iters);
  const double copy_bw = 2.0 * double(bytes) / copy_ms / 1e6;
  std::printf("%-24s %10.3f %12.1f %9.1f%%\n", "cudaMemcpy D2D", copy_ms, copy_bw, 100.0);
  std::vector<std::string> below;
  int kernels = 0;
  auto report = [&](const std::string& name, double ms, double traffic_factor) {
    const double bw = traffic_factor * double(bytes) / ms / 1e6;
    const double ratio = 100.0 * bw / copy_bw;
    ++kernels;
    if (ratio < kTargetPercent) below.push_back(name);
    std::printf("%-24s %10.3f %12.1f %9.1f%%\n", name.c_str(), ms, bw, ratio);
  };
  for (DataType dtype : {DataType::f32, DataType::f16, DataType::bf16, DataType::f64, DataType::i32, DataType::i8}) {
    const std::size_t count = bytes / dtype_size(dtype);
    report("reduce sum " + std::string(to_string(dtype)),
           time_ms([&] { cuda::reduce(c, a, b, count, dtype, ReduceOp::sum, nullptr); }, iters), 3.0);
  }
  report("reduce max f32",
         time_ms([&] { cuda::reduce(c, a, b, bytes / 4, DataType::f32, ReduceOp::max, nullptr); }, iters), 3.0);
  // MEAN's divide on ordinary values (bytes 0x71: about 2^99 in f32 and
  // bf16, still normal, 2^-84, after a warm-up and 60 divisions by 8, so
  // at most 60 are timed) and on zeros, which a GPU's IEEE division sends
  // down its slow path.
  const int divide_iters = std::min(iters, 60);
  for (const auto& [fill, what] : {std::pair{0x71, ""}, std::pair{0x00, ", zeros"}}) {
    CUDA_OK(cudaMemset(c, fill, bytes));
    report(fmt::format("divide (mean) f32{}", what),
           time_ms([&] { cuda::divide(c, bytes / 4, DataType::f32, 8, nullptr); }, divide_iters), 2.0);
    CUDA_OK(cudaMemset(c, fill, bytes));
    report(fmt::format("divide (mean) bf16{}", what),
           time_ms([&] { cuda::divide(c, bytes / 2, DataType::bf16, 8, nullptr); }, divide_iters), 2.0);
  }

  // Pack/unpack of 64 equal tensors covering the buffer (bytes >= 1 KiB, so
  // each is at least 16 bytes).
  const std::size_t tensors = 64, each = bytes / tensors / 16 * 16;
  std::vector<cuda::PackDesc> descs;
  for (std::size_t t = 0; t < tensors; ++t) descs.push_back({a + t * each, each, t * each});
  auto* ddescs = static_cast<cuda::PackDesc*>(device_buffer(descs.size() * sizeof(cuda::PackDesc)));
  CUDA_OK(cudaMemcpy(ddescs, descs.data(), descs.size() * sizeof(cuda::PackDesc), cudaMemcpyHostToDevice));
  const double packed_fraction = double(each * tensors) / double(bytes);
  report("pack 64 tensors", time_ms([&] { cuda::pack(c, ddescs, tensors, each, nullptr); }, iters) / packed_fraction,
         2.0);
  report("unpack 64 tensors",
         time_ms([&] { cuda::unpack(c, ddescs, tensors, each, nullptr); }, iters) / packed_fraction, 2.0);
  CUDA_OK(cudaDeviceSynchronize());
  cudaFree(a), cudaFree(b), cudaFree(c), cudaFree(ddescs);

  if (below.empty())
    std::printf("# verdict: all %d kernels at >= %.0f%% of the copy's traffic bandwidth: target met\n", kernels,
                kTargetPercent);
  else
    std::printf("# verdict: %zu of %d kernels below %.0f%% of the copy's traffic bandwidth (%s): target not met\n",
                below.size(), kernels, kTargetPercent, fmt::format("{}", fmt::join(below, ", ")).c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::optional<kernels_app::Options> options;
  try {
    std::string help;
    options = kernels_app::parse_options(argc, argv, &help);
    if (!options) {
      std::printf("%s", help.c_str());
      return 0;
    }
  } catch (const kernels_app::UsageError& e) {
    std::fprintf(stderr, "strata-gpu-kernels: %s (see --help)\n", e.what());
    return kExitUsage;
  }
  std::string why;
  if (!gpu::device_available(&why)) {
    std::printf("strata-gpu-kernels: SKIP: %s\n", why.c_str());
    return kExitSkip;
  }
  try {
    return measure(*options);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "strata-gpu-kernels: %s\n", e.what());
    return kExitError;
  }
}
