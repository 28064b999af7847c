// strata-gpu-kernels: bandwidth of strata's CUDA kernels next to a
// device-to-device cudaMemcpy measured in the same run. Bandwidth counts
// memory traffic: copy and pack/unpack move 2 bytes per byte (read + write),
// reduce 3 (two reads, one write), divide 2. Target on an H100: every kernel
// at >= 90% of the copy's traffic bandwidth.
//   strata-gpu-kernels [--bytes N] [--iters N]
// Prints "no CUDA device" and exits 77 where there is none.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "cuda/kernels.hpp"
#include "gpu_test.hpp"

using namespace strata;

namespace {

#define CUDA_OK(call)                                                                        \
  do {                                                                                       \
    cudaError_t rc_ = (call);                                                                \
    if (rc_ != cudaSuccess) {                                                                \
      std::fprintf(stderr, "CUDA error %s at %s:%d\n", cudaGetErrorString(rc_), __FILE__, __LINE__); \
      std::exit(1);                                                                          \
    }                                                                                        \
  } while (0)

double time_ms(const std::function<void()>& body, int iters) {
  cudaEvent_t start, stop;
  CUDA_OK(cudaEventCreate(&start));
  CUDA_OK(cudaEventCreate(&stop));
  body();  // warm-up
  CUDA_OK(cudaEventRecord(start));
  for (int i = 0; i < iters; ++i) body();
  CUDA_OK(cudaEventRecord(stop));
  CUDA_OK(cudaEventSynchronize(stop));
  float ms = 0;
  CUDA_OK(cudaEventElapsedTime(&ms, start, stop));
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return double(ms) / iters;
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t bytes = std::size_t(256) << 20;
  int iters = 20;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--bytes") && i + 1 < argc) bytes = std::strtoull(argv[++i], nullptr, 10);
    else if (!std::strcmp(argv[i], "--iters") && i + 1 < argc) iters = std::atoi(argv[++i]);
    else {
      std::fprintf(stderr, "usage: strata-gpu-kernels [--bytes N] [--iters N]\n");
      return 2;
    }
  }
  gpu_test::skip_without_device("strata-gpu-kernels");
  int device = 0;
  cudaDeviceProp prop{};
  CUDA_OK(cudaGetDevice(&device));
  CUDA_OK(cudaGetDeviceProperties(&prop, device));
  bytes = bytes / 16 * 16;
  std::byte *a, *b, *c;
  CUDA_OK(cudaMalloc(&a, bytes));
  CUDA_OK(cudaMalloc(&b, bytes));
  CUDA_OK(cudaMalloc(&c, bytes));
  CUDA_OK(cudaMemset(a, 0, bytes));
  CUDA_OK(cudaMemset(b, 0, bytes));

  std::printf("# device %d: %s, %zu bytes per buffer, %d iterations\n", device, prop.name, bytes, iters);
  std::printf("%-24s %10s %12s %10s\n", "kernel", "time(ms)", "traffic GB/s", "vs copy");
  const double copy_ms = time_ms([&] { CUDA_OK(cudaMemcpyAsync(c, a, bytes, cudaMemcpyDeviceToDevice)); }, iters);
  const double copy_bw = 2.0 * double(bytes) / copy_ms / 1e6;
  std::printf("%-24s %10.3f %12.1f %9.1f%%\n", "cudaMemcpy D2D", copy_ms, copy_bw, 100.0);
  int below = 0;
  auto report = [&](const std::string& name, double ms, double traffic_factor) {
    const double bw = traffic_factor * double(bytes) / ms / 1e6;
    const double ratio = 100.0 * bw / copy_bw;
    if (ratio < 90.0) ++below;
    std::printf("%-24s %10.3f %12.1f %9.1f%%\n", name.c_str(), ms, bw, ratio);
  };
  for (DataType dtype : {DataType::f32, DataType::f16, DataType::bf16, DataType::f64, DataType::i32, DataType::i8}) {
    const std::size_t count = bytes / dtype_size(dtype);
    report("reduce sum " + std::string(to_string(dtype)),
           time_ms([&] { cuda::reduce(c, a, b, count, dtype, ReduceOp::sum, nullptr); }, iters), 3.0);
  }
  report("reduce max f32",
         time_ms([&] { cuda::reduce(c, a, b, bytes / 4, DataType::f32, ReduceOp::max, nullptr); }, iters), 3.0);
  report("divide (mean) f32", time_ms([&] { cuda::divide(c, bytes / 4, DataType::f32, 8, nullptr); }, iters), 2.0);
  report("divide (mean) bf16", time_ms([&] { cuda::divide(c, bytes / 2, DataType::bf16, 8, nullptr); }, iters), 2.0);

  // Pack/unpack of 64 equal tensors covering the buffer.
  const std::size_t tensors = 64, each = bytes / tensors / 16 * 16;
  std::vector<cuda::PackDesc> descs;
  for (std::size_t t = 0; t < tensors; ++t) descs.push_back({a + t * each, each, t * each});
  cuda::PackDesc* ddescs;
  CUDA_OK(cudaMalloc(&ddescs, descs.size() * sizeof(cuda::PackDesc)));
  CUDA_OK(cudaMemcpy(ddescs, descs.data(), descs.size() * sizeof(cuda::PackDesc), cudaMemcpyHostToDevice));
  const double packed_fraction = double(each * tensors) / double(bytes);
  report("pack 64 tensors", time_ms([&] { cuda::pack(c, ddescs, tensors, each, nullptr); }, iters) / packed_fraction,
         2.0);
  report("unpack 64 tensors",
         time_ms([&] { cuda::unpack(c, ddescs, tensors, each, nullptr); }, iters) / packed_fraction, 2.0);
  CUDA_OK(cudaDeviceSynchronize());
  std::printf("# %d kernel(s) below 90%% of the copy's bandwidth\n", below);
  cudaFree(a), cudaFree(b), cudaFree(c), cudaFree(ddescs);
  return 0;
}
