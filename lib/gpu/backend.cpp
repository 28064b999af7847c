// The GPU backend behind the seam (CUDA + NCCL builds): dispatch of a spec entry's name to the GPU algorithms in
// lib/nccl, MEAN scaling, batches through the pack kernels, and the
// blocking wait for the result.
#include "gpu/backend.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "util/where.hpp"
#include "cuda/check.hpp"
#include "cuda/kernels.hpp"
#include "nccl/algorithms.hpp"
#include "nccl/replicas.hpp"
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

  void all_reduce(const GpuJob& job, const util::Deadline& deadline) override {
    run(Collective::all_reduce, job, deadline);
  }
  void reduce(const GpuJob& job, const util::Deadline& deadline) override { run(Collective::reduce, job, deadline); }
  void broadcast(const GpuJob& job, const util::Deadline& deadline) override {
    run(Collective::broadcast, job, deadline);
  }

  void run_pack(const GpuPack& pack, const GpuJob& proto, const util::Deadline& deadline) override {
    engine_.ensure_usable();
    const std::size_t replicas = pack.replicas.size();
    if (proto.count == 0 || replicas == 0) return;
    std::vector<int> devices;
    for (const GpuReplicaPack& replica : pack.replicas)
      devices.push_back(replica.device < 0 ? engine_.device() : replica.device);
    check_device(devices[0]);
    std::vector<std::vector<cuda::PackDesc>> layouts;
    for (const GpuReplicaPack& replica : pack.replicas) layouts.push_back(describe(replica, proto.dtype));
    if (replicas == 1 && layouts[0].size() == 1 && pack.lands_here) {
      // One piece of one replica: reduce it where it lies.
      GpuJob job = proto;
      job.in = job.out = layouts[0][0].ptr;
      run(pack.collective, job, deadline);
      return;
    }
    cuda::DeviceGuard guard(engine_.device());
    nccl::ReplicaSet& set = engine_.replicas();
    GpuJob job = proto;
    const std::size_t element = dtype_size(proto.dtype);
    const std::size_t bytes = packed_bytes(layouts[0]);
    job.count = bytes / element;
    const plan::CallInfo info = info_for(pack.collective, job);
    engine_.breaking_on_failure([&] {
      // 1. Every replica's pieces into its pack buffer, on its own stream.
      std::vector<void*> packed(replicas);
      std::vector<Descriptors> descs(replicas);
      for (std::size_t r = 0; r < replicas; ++r) {
        cuda::DeviceGuard on(devices[r]);
        const std::vector<cuda::PackDesc>& host = layouts[r];
        cuda::DeviceBuffer& device_descs = r == 0 ? descs_ : set.slot(r, devices[r]).descs;
        packed[r] = r == 0 ? engine_.device_scratch(2, bytes) : set.slot(r, devices[r]).packed.get(bytes);
        descs[r] = {static_cast<cuda::PackDesc*>(device_descs.get(host.size() * sizeof(cuda::PackDesc))), host.size(),
                    largest_piece(host)};
        const cudaStream_t stream = set.stream(engine_, r);
        // From pageable memory: returns once the descriptors are staged.
        STRATA_CHECK_CUDA(cudaMemcpyAsync(descs[r].device, host.data(), host.size() * sizeof(cuda::PackDesc),
                                          cudaMemcpyHostToDevice, stream));
        cuda::pack(packed[r], descs[r].device, descs[r].count, descs[r].largest, stream);
      }
      job.in = job.out = packed[0];

      // 2. Combine the replicas and run the algorithm across ranks.
      if (replicas > 1 && pack.collective == Collective::all_reduce && job.algorithm == "nccl") {
        plan::Job level = level_of(job);
        nccl::nccl_replica_all_reduce(engine_, devices, packed, level, deadline, info);
        if (job.op == ReduceOp::mean)
          for (std::size_t r = 0; r < replicas; ++r) {
            cuda::DeviceGuard on(devices[r]);
            cuda::divide(packed[r], job.count, job.dtype, job.contributors, set.stream(engine_, r));
          }
      } else {
        if (replicas > 1 && pack.collective != Collective::broadcast) combine_on_first(set, devices, packed, job);
        run(pack.collective, job, deadline, /*wait=*/false);
        if (pack.lands_here && replicas > 1) spread_from_first(set, devices, packed, bytes);
      }

      // 3. The results back into the callers' tensors.
      if (pack.lands_here)
        for (std::size_t r = 0; r < replicas; ++r) {
          cuda::DeviceGuard on(devices[r]);
          cuda::unpack(packed[r], descs[r].device, descs[r].count, descs[r].largest, set.stream(engine_, r));
        }
    });
    finish(deadline, info);
  }

 private:
  // A replica's pack descriptors in device memory.
  struct Descriptors {
    cuda::PackDesc* device = nullptr;
    std::size_t count = 0;
    std::size_t largest = 0;  // bytes of the largest piece (sizes the pack kernel's grid)
  };

  // A replica's pack layout: non-empty pieces in order, each at a 16-byte
  // aligned offset so that the pack kernel and the reductions use vector
  // loads (the padding between pieces travels but is never read back).
  static std::vector<cuda::PackDesc> describe(const GpuReplicaPack& replica, DataType dtype) {
    const std::size_t element = dtype_size(dtype);
    std::vector<cuda::PackDesc> descs;
    std::size_t offset = 0;
    for (const GpuPiece& piece : replica.pieces) {
      if (piece.count == 0) continue;
      descs.push_back({piece.data, piece.count * element, offset});
      offset += (piece.count * element + 15) / 16 * 16;
    }
    return descs;
  }
  static std::size_t packed_bytes(const std::vector<cuda::PackDesc>& descs) {
    return descs.empty() ? 0 : (descs.back().offset + descs.back().bytes + 15) / 16 * 16;
  }
  static std::size_t largest_piece(const std::vector<cuda::PackDesc>& descs) {
    std::size_t largest = 0;
    for (const cuda::PackDesc& d : descs) largest = std::max(largest, d.bytes);
    return largest;
  }

  static plan::Job level_of(const GpuJob& job) {
    return plan::Job{job.in,   job.out,    job.count, job.dtype, job.op == ReduceOp::mean ? ReduceOp::sum : job.op,
                       job.root, job.shards, job.chunk_bytes};
  }

  void check_device(int device) const {
    if (device >= 0 && device != engine_.device())
      throw InvalidArgument(fmt::format("tensor.device = {}, but this rank's GPU backend drives device {} (the "
                                        "rank's GPU assignment: STRATA_GPU_MAP, hwloc or round robin; see "
                                        "strata-topo)",
                                        device, engine_.device()));
  }

  // Replicas 1.. into replica 0's pack, in replica order (deterministic):
  // each waits for its pack kernel, crosses with a peer copy and is reduced
  // on the engine's device. Mean sums here; run() divides at the end.
  void combine_on_first(nccl::ReplicaSet& set, const std::vector<int>& devices, const std::vector<void*>& packed,
                        const GpuJob& job) {
    const std::size_t bytes = job.count * dtype_size(job.dtype);
    void* incoming = engine_.device_scratch(0, bytes);
    const ReduceOp op = job.op == ReduceOp::mean ? ReduceOp::sum : job.op;
    for (std::size_t r = 1; r < packed.size(); ++r) {
      nccl::ReplicaSet::Slot& slot = set.slot(r, devices[r]);
      slot.ready->record(slot.stream->get());
      STRATA_CHECK_CUDA(cudaStreamWaitEvent(engine_.stream(), slot.ready->get(), 0));
      STRATA_CHECK_CUDA(
          cudaMemcpyPeerAsync(incoming, engine_.device(), packed[r], devices[r], bytes, engine_.stream()));
      cuda::reduce(packed[0], packed[0], incoming, job.count, job.dtype, op, engine_.stream());
    }
  }

  // Replica 0's result to the other replicas' packs, once it is complete.
  void spread_from_first(nccl::ReplicaSet& set, const std::vector<int>& devices, const std::vector<void*>& packed,
                         std::size_t bytes) {
    cuda::Event& done = engine_.event(0);
    done.record(engine_.stream());
    for (std::size_t r = 1; r < packed.size(); ++r) {
      nccl::ReplicaSet::Slot& slot = set.slot(r, devices[r]);
      STRATA_CHECK_CUDA(cudaStreamWaitEvent(slot.stream->get(), done.get(), 0));
      STRATA_CHECK_CUDA(
          cudaMemcpyPeerAsync(packed[r], devices[r], packed[0], engine_.device(), bytes, slot.stream->get()));
    }
  }

  plan::CallInfo info_for(Collective collective, const GpuJob& job) const {
    static constexpr std::string_view names[] = {"all_reduce", "reduce", "broadcast"};
    return plan::CallInfo{names[int(collective)], job.sequence, job.count * dtype_size(job.dtype), job.algorithm};
  }

  // Waits for the call's GPU work (every replica stream included).
  void finish(const util::Deadline& deadline, const plan::CallInfo& info) {
    engine_.breaking_on_failure([&] { engine_.wait(deadline, info); });
  }

  void run(Collective collective, const GpuJob& job, const util::Deadline& deadline, bool wait = true) {
    engine_.ensure_usable();
    if (job.count == 0) return;
    check_device(job.device);
    cuda::DeviceGuard guard(engine_.device());
    const plan::CallInfo info = info_for(collective, job);
    const plan::Job level = level_of(job);
    const std::string_view intra = intra_of(job.algorithm), cross = cross_of(job.algorithm);
    const topo::NodeSplit& split = engine_.split();
    engine_.breaking_on_failure([&] {
      if (collective == Collective::all_reduce && serves_natively(job.algorithm) && !cross.empty() &&
          split.node_count > 1) {
        nccl::hierarchical_all_reduce(engine_, intra, cross == "nccl" ? nullptr : job.host_algorithm, level, deadline,
                                      info);
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
        plan::Job whole = level;
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
        nccl::staged(engine_, engine_.comm(), collective, *job.host_algorithm, level, deadline, info);
      }
      const bool has_result = collective == Collective::all_reduce ||
                              (collective == Collective::reduce && engine_rank() == job.root);
      if (job.op == ReduceOp::mean && has_result)
        cuda::divide(job.out, job.count, job.dtype, job.contributors, engine_.stream());
    });
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
                                  util::where(), why));
  int count = 0;
  STRATA_CHECK_CUDA(cudaGetDeviceCount(&count));
  if (device < 0 || device >= count)
    throw Unavailable(fmt::format("strata [{}]: CUDA device {} does not exist here ({} visible)", util::where(),
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
