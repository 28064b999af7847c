// strata-bench's CUDA side, inside strata-bench-cuda.so (cuda_module.hpp):
// device probing, device buffers and the pinned copy reference, and the
// module's entry point. Plain CUDA runtime calls; the bench uses no strata
// internals, like any application.
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "cuda_buffers.hpp"
#include "cuda_module.hpp"

namespace bench::cuda {
// The table's functions, each with the contract of its namesake in
// cuda_buffers.hpp. The executable implements those namesakes by calling
// these through the table; declaring these first makes every call below
// bind here (the module is linked with --no-undefined, so a call that bound
// to the executable's would not link).
namespace in_module {
int device_count(std::string* why);
void set_device(int device);
std::string device_name(int device);
std::string pci_bus_id(int device);
std::unique_ptr<DeviceMemory> device_memory(int device);
CopyBandwidth pinned_copy_bandwidth(int device, std::size_t bytes, int iters);

namespace {

std::string cuda_text(cudaError_t rc) { return fmt::format("{} ({})", cudaGetErrorName(rc), cudaGetErrorString(rc)); }

void check(cudaError_t rc, const std::string& what) {
  if (rc == cudaSuccess) return;
  cudaGetLastError();  // clear a non-sticky error so that later calls report their own
  throw std::runtime_error(fmt::format("{} failed: {}", what, cuda_text(rc)));
}

class CudaMemory final : public DeviceMemory {
 public:
  explicit CudaMemory(int device) : device_(device) {}
  strata::Memory kind() const override { return strata::Memory::cuda; }
  int device() const override { return device_; }
  void* allocate(std::size_t bytes) override {
    set_device(device_);
    void* p = nullptr;
    check(cudaMalloc(&p, bytes), fmt::format("cudaMalloc of {} bytes on device {}", bytes, device_));
    return p;
  }
  void release(void* data) noexcept override { cudaFree(data); }
  void upload(void* device_data, const void* host_data, std::size_t bytes) override {
    check(cudaMemcpy(device_data, host_data, bytes, cudaMemcpyHostToDevice),
          fmt::format("cudaMemcpy of {} bytes host to device {}", bytes, device_));
    // From pageable memory cudaMemcpy may return before the DMA has landed;
    // strata's streams must not read the tensor before it has.
    check(cudaStreamSynchronize(nullptr), "cudaStreamSynchronize after an upload");
  }
  void download(void* host_data, const void* device_data, std::size_t bytes) override {
    check(cudaMemcpy(host_data, device_data, bytes, cudaMemcpyDeviceToHost),
          fmt::format("cudaMemcpy of {} bytes device {} to host", bytes, device_));
  }

 private:
  int device_;
};

// Frees what it owns on every path, so that a failing CUDA call in the copy
// reference leaks nothing.
struct CopyResources {
  void* host = nullptr;
  void* device = nullptr;
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr, stop = nullptr;
  ~CopyResources() {
    if (start) cudaEventDestroy(start);
    if (stop) cudaEventDestroy(stop);
    if (stream) cudaStreamDestroy(stream);
    if (device) cudaFree(device);
    if (host) cudaFreeHost(host);
  }
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t mid = v.size() / 2;
  return v.size() % 2 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
}

}  // namespace

int device_count(std::string* why) {
  int count = 0;
  const cudaError_t rc = cudaGetDeviceCount(&count);
  if (rc != cudaSuccess) {
    cudaGetLastError();
    if (why) *why = fmt::format("cudaGetDeviceCount failed with {}", cuda_text(rc));
    return 0;
  }
  if (count == 0 && why) *why = "cudaGetDeviceCount found 0 devices";
  return count;
}

void set_device(int device) { check(cudaSetDevice(device), fmt::format("cudaSetDevice({})", device)); }

std::string device_name(int device) {
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, device), fmt::format("cudaGetDeviceProperties({})", device));
  return std::string(prop.name, strnlen(prop.name, sizeof prop.name));
}

std::string pci_bus_id(int device) {
  char id[32] = {};
  check(cudaDeviceGetPCIBusId(id, sizeof id, device), fmt::format("cudaDeviceGetPCIBusId({})", device));
  std::string text(id);
  for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return text;
}

std::unique_ptr<DeviceMemory> device_memory(int device) { return std::make_unique<CudaMemory>(device); }

CopyBandwidth pinned_copy_bandwidth(int device, std::size_t bytes, int iters) {
  if (bytes == 0) return {};
  set_device(device);
  CopyResources r;
  check(cudaMallocHost(&r.host, bytes), fmt::format("cudaMallocHost of {} bytes", bytes));
  check(cudaMalloc(&r.device, bytes), fmt::format("cudaMalloc of {} bytes on device {}", bytes, device));
  check(cudaStreamCreateWithFlags(&r.stream, cudaStreamNonBlocking), "cudaStreamCreate");
  check(cudaEventCreate(&r.start), "cudaEventCreate");
  check(cudaEventCreate(&r.stop), "cudaEventCreate");
  // Touch both buffers so that first-use costs are not timed.
  check(cudaMemsetAsync(r.device, 1, bytes, r.stream), "cudaMemsetAsync");
  std::fill_n(static_cast<unsigned char*>(r.host), bytes, 2);

  auto gbps = [&](void* dst, const void* src, cudaMemcpyKind kind, const char* name) {
    std::vector<double> seconds(static_cast<std::size_t>(std::max(iters, 1)));
    check(cudaMemcpyAsync(dst, src, bytes, kind, r.stream), fmt::format("cudaMemcpyAsync {} (warm-up)", name));
    for (auto& s : seconds) {
      check(cudaEventRecord(r.start, r.stream), "cudaEventRecord");
      check(cudaMemcpyAsync(dst, src, bytes, kind, r.stream), fmt::format("cudaMemcpyAsync {}", name));
      check(cudaEventRecord(r.stop, r.stream), "cudaEventRecord");
      check(cudaEventSynchronize(r.stop), "cudaEventSynchronize");
      float ms = 0;
      check(cudaEventElapsedTime(&ms, r.start, r.stop), "cudaEventElapsedTime");
      s = static_cast<double>(ms) / 1e3;
    }
    const double t = median(seconds);
    return t > 0 ? static_cast<double>(bytes) / t / 1e9 : 0.0;
  };
  CopyBandwidth b;
  b.d2h_gbps = gbps(r.host, r.device, cudaMemcpyDeviceToHost, "D2H");
  b.h2d_gbps = gbps(r.device, r.host, cudaMemcpyHostToDevice, "H2D");
  return b;
}

}  // namespace in_module
}  // namespace bench::cuda

extern "C" __attribute__((visibility("default"))) const bench::cuda::Module* strata_bench_cuda_module() {
  using namespace bench::cuda;
  static const Module table{
      .abi = kModuleAbi,
      .device_count = in_module::device_count,
      .set_device = in_module::set_device,
      .pci_bus_id = in_module::pci_bus_id,
      .device_name = in_module::device_name,
      .device_memory = in_module::device_memory,
      .pinned_copy_bandwidth = in_module::pinned_copy_bandwidth,
      .device_stream = open_device_stream,
      .nccl_baseline = open_nccl_baseline,
  };
  return &table;
}
