#include "gpu_plugin/nccl/nccl_backend.hpp"

#include <fmt/format.h>

#include "gpu_plugin/cuda/check.hpp"
#include "gpu_plugin/cuda/kernels.hpp"
#include "gpu_plugin/cuda/probe.hpp"
#include "gpu_plugin/nccl/engine.hpp"
#include "gpu_plugin/nccl/group_call.hpp"
#include "gpu_plugin/nccl/packer.hpp"
#include "gpu_plugin/nccl/replica_devices.hpp"
#include "gpu_plugin/nccl/replicas.hpp"
#include "strata/errors.hpp"
#include "util/where.hpp"

namespace strata::nccl {
namespace {

cudaMemcpyKind kind_of(gpu::Copy direction) {
  switch (direction) {
    case gpu::Copy::device_to_device: return cudaMemcpyDeviceToDevice;
    case gpu::Copy::device_to_host: return cudaMemcpyDeviceToHost;
    case gpu::Copy::host_to_device: return cudaMemcpyHostToDevice;
  }
  return cudaMemcpyDefault;
}

class NcclBackend final : public gpu::Backend {
 public:
  NcclBackend(MPI_Comm comm, const topo::NodeSplit& split, int device, std::vector<topo::GpuRow> rows)
      : engine_(comm, split, device, std::move(rows)), replica_devices_(engine_) {
    STRATA_CHECK_CUDA(cudaGetDeviceCount(&visible_));
  }
  // The engine settles its streams before the packer's descriptors are
  // freed (members die after this body, the packer first): a pack kernel
  // or descriptor upload may still be queued when the communicator ends.
  ~NcclBackend() override {
    if (!engine_.shut_down()) packer_.abandon();
  }

  int device() const override { return engine_.device(); }

  void open(const gpu::CallContext& call) override {
    engine_.ensure_usable();
    devices_.assign(call.devices.begin(), call.devices.end());
    if (devices_.empty()) devices_.push_back(-1);
    for (std::size_t r = 0; r < devices_.size(); ++r) {
      int& device = devices_[r];
      if (device < 0) device = engine_.device();
      if (!call.packed && device != engine_.device())
        throw InvalidArgument(
            util::located(fmt::format("tensor.device = {}, but this rank's GPU backend drives device {} (the "
                                      "rank's GPU assignment: STRATA_GPU_MAP, else its own nearest free GPU; see "
                                      "strata-topo)",
                                      device, engine_.device())));
      if (device >= visible_)
        throw InvalidArgument(
            util::located(fmt::format("replica {} is on CUDA device {}, but this process sees {} CUDA "
                                      "device(s)",
                                      r, device, visible_)));
    }
    // open() is not matched by close() when it throws: restore the device here.
    engine_.breaking_on_failure([&] {
      try {
        engine_.open(call, devices_);
      } catch (...) {
        engine_.close();
        throw;
      }
    });
  }

  void complete() override {
    engine_.breaking_on_failure([&] { engine_.wait(); });
  }

  gpu::Fence enqueued() override {
    gpu::Fence fence;
    engine_.breaking_on_failure([&] { fence = engine_.enqueued_fence(); });
    return fence;
  }

  gpu::Fence mark(void* stream, int device) override { return engine_.mark(stream, device); }
  bool passed(gpu::Fence fence) override { return engine_.passed(fence); }
  void release(gpu::Fence fence) noexcept override { engine_.release(fence); }
  std::string async_error() override { return engine_.async_error(); }
  gpu::Gate hold(void* stream) override { return engine_.hold(stream); }
  void open_gate(gpu::Gate gate) noexcept override { engine_.open_gate(gate); }
  void reclaim() noexcept override { engine_.reclaim(); }

  void close() noexcept override { engine_.close(); }

  void mark_broken(const std::string& reason) noexcept override { engine_.mark_broken(reason); }

  MPI_Comm mpi(plan::Group group) const override { return engine_.mpi(group); }
  const util::Deadline& deadline() const override { return engine_.deadline(); }
  const plan::CallInfo& info() const override { return engine_.info(); }
  util::Workspace& workspace() override { return engine_.workspace(); }

  void* device_scratch(int slot, std::size_t bytes) override { return engine_.device_scratch(slot, bytes); }
  void* staging(std::size_t index, std::size_t bytes) override { return engine_.staging(index, bytes); }

  void copy(void* dst, const void* src, std::size_t bytes, gpu::Copy direction) override {
    STRATA_CHECK_CUDA(cudaMemcpyAsync(dst, src, bytes, kind_of(direction), engine_.stream()));
  }

  void reduce(void* dst, const void* a, const void* b, std::size_t count, DataType dtype, ReduceOp op) override {
    cuda::reduce(dst, a, b, count, dtype, op, engine_.stream());
  }

  void divide(void* data, std::size_t count, DataType dtype, std::size_t divisor, std::size_t replica) override {
    if (replica == gpu::kHome) return cuda::divide(data, count, dtype, divisor, engine_.stream());
    cuda::DeviceGuard on(devices_.at(replica));
    cuda::divide(data, count, dtype, divisor, engine_.replicas().stream(engine_, replica));
  }

  void record(std::size_t event) override { engine_.event(event).record(engine_.stream()); }
  void wait_for(std::size_t event) override { engine_.wait(&engine_.event(event)); }
  void wait() override { engine_.wait(); }

  gpu::NcclComm nccl_comm(plan::Group group) override {
    const Comm& comm = engine_.nccl(group);
    return {comm.rank(), comm.size()};
  }

  void nccl(plan::Group group, std::span<const gpu::NcclOp> ops, const char* what) override {
    issue(engine_, engine_.nccl(group), ops, what);
  }

  gpu::Packed pack(const gpu::GpuPack& pack) override { return packer_.pack(engine_, pack, devices_); }
  void combine(const gpu::Packed& packed, ReduceOp op, std::size_t replicas) override {
    engine_.replicas().combine(engine_, packed, op, replicas);
  }
  bool replica_ranks_usable(const gpu::Packed& packed) override { return replica_devices_.usable(packed.devices); }
  void replica_all_reduce(const gpu::Packed& packed, ReduceOp op) override {
    engine_.replicas().all_reduce(engine_, replica_devices_.table(), packed, op);
  }
  void spread(const gpu::Packed& packed) override { engine_.replicas().spread(engine_, packed); }
  void unpack(const gpu::Packed& packed) override { packer_.unpack(engine_, packed); }

 private:
  Engine engine_;
  int visible_ = 0;
  std::vector<int> devices_;  // the open call's replica devices
  ReplicaDevices replica_devices_;
  Packer packer_;
};

}  // namespace

std::unique_ptr<gpu::Backend> make_backend(MPI_Comm comm, const topo::NodeSplit& split, int device,
                                           std::vector<topo::GpuRow> rows) {
  std::string why;
  if (!cuda::device_available(&why))
    throw Unavailable(fmt::format("strata [{}]: CUDA tensors are unavailable: {}; pass host tensors or run on a "
                                  "machine with a GPU",
                                  util::where(), why));
  int count = 0;
  STRATA_CHECK_CUDA(cudaGetDeviceCount(&count));
  if (device < 0 || device >= count)
    throw Unavailable(fmt::format("strata [{}]: CUDA device {} does not exist here ({} visible)", util::where(),
                                  device, count));
  return std::make_unique<NcclBackend>(comm, split, device, std::move(rows));
}

}  // namespace strata::nccl
