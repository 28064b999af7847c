// The GPU backend behind the seam (CUDA + NCCL builds): dispatch of a spec entry's name to the GPU algorithms in
// lib/nccl, MEAN scaling, batches through the pack kernels, and the
// blocking wait for the result.
#include "gpu/backend.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "core/where.hpp"
#include "cuda/check.hpp"
#include "cuda/kernels.hpp"
#include "nccl/algorithms.hpp"
#include "strata/errors.hpp"

namespace strata::gpu {
namespace {

std::string_view intra_of(std::string_view name) { return name.substr(0, name.find('/')); }
std::string_view cross_of(std::string_view name) {
  const auto slash = name.find('/');
  return slash == std::string_view::npos ? std::string_view() : name.substr(slash + 1);
}

class NcclBackend final : public Backend {
 public:
  NcclBackend(MPI_Comm comm, const topo::NodeSplit& split, int device) : engine_(comm, split, device) {
    MPI_Comm_size(comm, &size_);
  }

  int device() const override { return engine_.device(); }
  const std::string& broken_reason() const override { return engine_.broken_reason(); }

  void all_reduce(const GpuJob& job, const core::Deadline& deadline) override {
    run(Collective::all_reduce, job, deadline);
  }
  void reduce(const GpuJob& job, const core::Deadline& deadline) override { run(Collective::reduce, job, deadline); }
  void broadcast(const GpuJob& job, const core::Deadline& deadline) override {
    run(Collective::broadcast, job, deadline);
  }

  void batch_all_reduce(std::span<const GpuTensor> tensors, const GpuJob& proto, const core::Deadline& deadline,
                        const std::function<void(std::size_t)>& on_pack_done) override {
    engine_.ensure_usable();
    cuda::DeviceGuard guard(engine_.device());
    // Groups per dtype, in order of first appearance; offsets 16-byte aligned
    // so the pack kernel and the reduction use vector loads.
    std::vector<DataType> order;
    for (const GpuTensor& t : tensors)
      if (std::find(order.begin(), order.end(), t.dtype) == order.end()) order.push_back(t.dtype);
    for (std::size_t g = 0; g < order.size(); ++g) {
      const DataType dtype = order[g];
      const std::size_t element = dtype_size(dtype);
      std::vector<cuda::PackDesc> descs;
      std::size_t offset = 0, largest = 0;
      for (const GpuTensor& t : tensors) {
        if (t.dtype != dtype || t.count == 0) continue;
        descs.push_back({t.data, t.count * element, offset});
        largest = std::max(largest, t.count * element);
        offset += (t.count * element + 15) / 16 * 16;
      }
      if (!descs.empty()) {
        void* packed = engine_.device_scratch(1, offset);
        auto* device_descs = static_cast<cuda::PackDesc*>(descs_.get(descs.size() * sizeof(cuda::PackDesc)));
        STRATA_CHECK_CUDA(cudaMemcpyAsync(device_descs, descs.data(), descs.size() * sizeof(cuda::PackDesc),
                                          cudaMemcpyHostToDevice, engine_.stream()));
        cuda::pack(packed, device_descs, descs.size(), largest, engine_.stream());
        GpuJob job = proto;
        job.in = job.out = packed;
        job.count = offset / element;
        job.dtype = dtype;
        run(Collective::all_reduce, job, deadline, /*wait=*/false);
        cuda::unpack(packed, device_descs, descs.size(), largest, engine_.stream());
        finish(deadline, info_for(Collective::all_reduce, job));
      }
      if (on_pack_done) on_pack_done(g);
    }
  }

 private:
  host::CallInfo info_for(Collective collective, const GpuJob& job) const {
    static constexpr std::string_view names[] = {"all_reduce", "reduce", "broadcast"};
    return host::CallInfo{names[int(collective)], job.sequence, job.count * dtype_size(job.dtype), job.algorithm};
  }

  void finish(const core::Deadline& deadline, const host::CallInfo& info) {
    try {
      engine_.wait(deadline, info);
    } catch (const DeadlineExceeded&) {
      throw;
    } catch (const BackendError& e) {
      engine_.mark_broken(e.what());
      throw;
    }
  }

  void run(Collective collective, const GpuJob& job, const core::Deadline& deadline, bool wait = true) {
    engine_.ensure_usable();
    if (job.count == 0) return;
    if (job.device >= 0 && job.device != engine_.device())
      throw InvalidArgument(fmt::format("tensor.device = {}, but this rank's GPU backend drives device {} "
                                        "(chosen by STRATA_GPU_MAP, hwloc or local rank)",
                                        job.device, engine_.device()));
    cuda::DeviceGuard guard(engine_.device());
    const host::CallInfo info = info_for(collective, job);
    nccl::Level level{job.in, job.out, job.count, job.dtype, job.op == ReduceOp::mean ? ReduceOp::sum : job.op,
                      job.root, job.shards, job.chunk_bytes};
    const std::string_view intra = intra_of(job.algorithm), cross = cross_of(job.algorithm);
    const topo::NodeSplit& split = engine_.split();
    try {
      if (collective == Collective::all_reduce && serves_natively(job.algorithm) && !cross.empty() &&
          split.node_count > 1) {
        nccl::hierarchical_all_reduce(engine_, intra, cross, level, deadline, info);
      } else if (intra == "nccl") {
        // Flat NCCL (hierarchical names on one node, and reduce/broadcast, run `a` flat).
        nccl::Comm& world = engine_.world(deadline, info);
        switch (collective) {
          case Collective::all_reduce: nccl::nccl_all_reduce(engine_, world, level, deadline, info); break;
          case Collective::reduce: nccl::nccl_reduce(engine_, world, level, deadline, info); break;
          case Collective::broadcast: nccl::nccl_broadcast(engine_, world, level, deadline, info); break;
        }
      } else if (intra == "psgpu" && collective != Collective::broadcast) {
        const int owners = job.shards >= 2 ? std::min(job.shards, size_) : size_;
        nccl::Level whole = level;
        if (collective == Collective::reduce) {
          // Reduce = all-reduce into scratch; the root keeps it.
          whole.out = engine_.device_scratch(1, job.count * dtype_size(job.dtype));
        }
        nccl::psgpu_reduce_scatter(engine_, engine_.comm(), whole, owners, deadline, info);
        nccl::psgpu_all_gather(engine_, engine_.comm(), whole, owners, deadline, info);
        if (collective == Collective::reduce && engine_rank() == job.root)
          STRATA_CHECK_CUDA(cudaMemcpyAsync(job.out, whole.out, job.count * dtype_size(job.dtype),
                                            cudaMemcpyDeviceToDevice, engine_.stream()));
      } else {
        // A host algorithm (or psgpu's broadcast): run it on pinned copies.
        const host::Algorithm* algorithm = host::find_algorithm(intra);
        if (!algorithm) algorithm = host::find_algorithm("tree");
        nccl::staged(engine_, engine_.comm(), collective, *algorithm, level, deadline, info);
      }
      const bool has_result = collective == Collective::all_reduce ||
                              (collective == Collective::reduce && engine_rank() == job.root);
      if (job.op == ReduceOp::mean && has_result)
        cuda::divide(job.out, job.count, job.dtype, job.contributors, engine_.stream());
    } catch (const DeadlineExceeded& e) {
      engine_.mark_broken(e.what());
      throw;
    } catch (const BackendError& e) {
      engine_.mark_broken(e.what());
      throw;
    }
    if (wait) finish(deadline, info);
  }

  int engine_rank() const {
    int rank = 0;
    MPI_Comm_rank(engine_.comm(), &rank);
    return rank;
  }

  nccl::Engine engine_;
  int size_ = 1;
  cuda::DeviceBuffer descs_;
};

}  // namespace

bool built() { return true; }

bool device_available(std::string* why) {
  int count = 0;
  const cudaError_t rc = cudaGetDeviceCount(&count);
  if (rc != cudaSuccess || count == 0) {
    if (why)
      *why = rc != cudaSuccess
                 ? fmt::format("no usable CUDA device: cudaGetDeviceCount failed with {} ({})",
                               cudaGetErrorName(rc), cudaGetErrorString(rc))
                 : std::string("no CUDA device: cudaGetDeviceCount found 0 devices");
    cudaGetLastError();  // do not leave the error sticky for later calls
    return false;
  }
  return true;
}

std::unique_ptr<Backend> make_backend(MPI_Comm comm, const topo::NodeSplit& split, int device) {
  std::string why;
  if (!device_available(&why))
    throw Unavailable(fmt::format("strata [{}]: CUDA tensors are unavailable: {}; pass host tensors or run on a "
                                  "machine with a GPU",
                                  core::where(), why));
  int count = 0;
  STRATA_CHECK_CUDA(cudaGetDeviceCount(&count));
  if (device < 0 || device >= count)
    throw Unavailable(fmt::format("strata [{}]: CUDA device {} does not exist here ({} visible)", core::where(),
                                  device, count));
  return std::make_unique<NcclBackend>(comm, split, device);
}

std::vector<std::string> visible_devices() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // not sticky: later calls must see their own errors
    return {};
  }
  std::vector<std::string> ids;
  for (int device = 0; device < count; ++device) {
    char bus[32] = {};
    if (cudaDeviceGetPCIBusId(bus, int(sizeof bus), device) != cudaSuccess) {
      cudaGetLastError();
      return {};
    }
    ids.emplace_back(bus);
  }
  return ids;
}

}  // namespace strata::gpu
