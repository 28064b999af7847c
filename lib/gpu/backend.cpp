// The GPU backend behind the seam (CUDA + NCCL builds): the call scope, the
// levels the registry's GPU algorithms make (lib/nccl/levels.hpp), mean's
// divide kernel, and the pack primitives of batches. It decides nothing
// about plans: exec drives it.
#include "gpu/backend.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "cuda/check.hpp"
#include "cuda/kernels.hpp"
#include "host/transport.hpp"
#include "nccl/algorithms.hpp"
#include "nccl/engine.hpp"
#include "nccl/levels.hpp"
#include "nccl/replicas.hpp"
#include "strata/errors.hpp"
#include "util/abandoned.hpp"
#include "util/check.hpp"
#include "util/where.hpp"

namespace strata::gpu {
namespace {

class NcclBackend final : public Backend {
 public:
  NcclBackend(MPI_Comm comm, const topo::NodeSplit& split, int device, std::vector<topo::GpuRow> rows)
      : engine_(comm, split, device, std::move(rows)) {
    STRATA_CHECK_CUDA(cudaGetDeviceCount(&visible_));
  }
  ~NcclBackend() override {
    drop_levels();
    if (!engine_.broken_reason().empty()) {  // a given-up gather may still land: kept reachable, never freed
      util::keep_forever(gathered_.release());
    }
  }

  nccl::Engine& engine() { return engine_; }
  int device() const override { return engine_.device(); }

  void open(const CallContext& call) override {
    engine_.ensure_usable();
    devices_.assign(call.devices.begin(), call.devices.end());
    if (devices_.empty()) devices_.push_back(-1);
    for (std::size_t r = 0; r < devices_.size(); ++r) {
      int& device = devices_[r];
      if (device < 0) device = engine_.device();
      if (r == 0 && device != engine_.device())
        throw InvalidArgument(fmt::format("tensor.device = {}, but this rank's GPU backend drives device {} (the "
                                          "rank's GPU assignment: STRATA_GPU_MAP, else its own nearest free GPU; see "
                                          "strata-topo)",
                                          device, engine_.device()));
      if (device >= visible_)
        throw InvalidArgument(fmt::format("replica {} is on CUDA device {}, but this process sees {} CUDA "
                                          "device(s)",
                                          r, device, visible_));
    }
    // open() is not matched by close() when it throws: restore the device here.
    engine_.breaking_on_failure([&] {
      try {
        engine_.open(*call.deadline, call.info, call.producer, devices_);
      } catch (...) {
        engine_.close();
        throw;
      }
    });
  }

  void complete() override {
    engine_.breaking_on_failure([&] { engine_.wait(); });
  }

  void close() noexcept override { engine_.close(); }

  void divide(void* data, std::size_t count, DataType dtype, std::size_t divisor, std::size_t replica) override {
    nccl::ReplicaSet& set = engine_.replicas();
    cuda::DeviceGuard on(devices_.at(replica));
    cuda::divide(data, count, dtype, divisor, set.stream(engine_, replica));
  }

  Packed pack(const GpuPack& pack) override {
    Packed out;
    out.devices = devices_;
    out.dtype = pack.dtype;
    const std::size_t replicas = pack.replicas.size();
    std::vector<std::vector<cuda::PackDesc>> layouts;
    for (const GpuReplicaPack& replica : pack.replicas) layouts.push_back(describe(replica, pack.dtype));
    const std::size_t element = dtype_size(pack.dtype);
    if (replicas == 1 && layouts[0].size() == 1 && pack.lands_here) {
      // One piece of one replica: reduce it where it lies.
      out.data = {layouts[0][0].ptr};
      out.count = layouts[0][0].bytes / element;
      out.in_place = true;
      return out;
    }
    nccl::ReplicaSet& set = engine_.replicas();
    const std::size_t bytes = packed_bytes(layouts[0]);
    out.count = bytes / element;
    descs_.resize(replicas);
    for (std::size_t r = 0; r < replicas; ++r) {
      cuda::DeviceGuard on(devices_[r]);
      const std::vector<cuda::PackDesc>& host = layouts[r];
      cuda::DeviceBuffer& device_descs = r == 0 ? descs0_ : set.slot(r, devices_[r]).descs;
      out.data.push_back(r == 0 ? engine_.device_scratch(2, bytes) : set.slot(r, devices_[r]).packed.get(bytes));
      descs_[r] = {static_cast<cuda::PackDesc*>(device_descs.get(host.size() * sizeof(cuda::PackDesc))),
                   host.size(), largest_piece(host)};
      const cudaStream_t stream = set.stream(engine_, r);
      // From pageable memory: returns once the descriptors are staged.
      STRATA_CHECK_CUDA(cudaMemcpyAsync(descs_[r].device, host.data(), host.size() * sizeof(cuda::PackDesc),
                                        cudaMemcpyHostToDevice, stream));
      cuda::pack(out.data[r], descs_[r].device, descs_[r].count, descs_[r].largest, stream);
    }
    return out;
  }

  void combine(const Packed& packed, ReduceOp op) override {
    const DataType dtype = packed.dtype;
    // Each replica waits for its pack kernel, crosses with a peer copy and
    // is reduced on the engine's device, in replica order.
    nccl::ReplicaSet& set = engine_.replicas();
    const std::size_t bytes = packed.count * dtype_size(dtype);
    void* incoming = engine_.device_scratch(0, bytes);
    for (std::size_t r = 1; r < packed.data.size(); ++r) {
      nccl::ReplicaSet::Slot& slot = set.slot(r, packed.devices[r]);
      slot.ready->record(slot.stream->get());
      STRATA_CHECK_CUDA(cudaStreamWaitEvent(engine_.stream(), slot.ready->get(), 0));
      STRATA_CHECK_CUDA(cudaMemcpyPeerAsync(incoming, engine_.device(), packed.data[r], packed.devices[r], bytes,
                                            engine_.stream()));
      cuda::reduce(packed.data[0], packed.data[0], incoming, packed.count, dtype, op, engine_.stream());
    }
  }

  bool replica_ranks_usable(const Packed& packed) override {
    // Every rank's replica devices, gathered in this call (a cached answer
    // could differ between ranks whose devices changed and ranks whose did
    // not), then the control plane's decision, identical on every rank.
    host_table_ = gather_devices(packed.devices);
    const topo::ReplicaPlane plane = topo::decide_replicas(engine_.rows(), host_table_);
    if (!plane.mismatch.empty()) throw Mismatch(fmt::format("strata [{}]: {}", util::where(), plane.mismatch));
    if (!plane.invalid.empty()) throw InvalidArgument(fmt::format("strata [{}]: {}", util::where(), plane.invalid));
    return plane.nccl.usable;
  }

  void replica_all_reduce(const Packed& packed, ReduceOp op) override {
    const std::span<const ncclComm_t> comms = engine_.replicas().world(engine_, host_table_);
    plan::Job job;
    job.count = packed.count;
    job.dtype = packed.dtype;
    job.op = op;
    nccl::nccl_replica_all_reduce(engine_, comms, packed.data, job);
  }

  void spread(const Packed& packed) override {
    nccl::ReplicaSet& set = engine_.replicas();
    const std::size_t bytes = packed.count * dtype_size(packed.dtype);
    cuda::Event& done = engine_.event(0);
    done.record(engine_.stream());
    for (std::size_t r = 1; r < packed.data.size(); ++r) {
      nccl::ReplicaSet::Slot& slot = set.slot(r, packed.devices[r]);
      STRATA_CHECK_CUDA(cudaStreamWaitEvent(slot.stream->get(), done.get(), 0));
      STRATA_CHECK_CUDA(cudaMemcpyPeerAsync(packed.data[r], packed.devices[r], packed.data[0], engine_.device(),
                                            bytes, slot.stream->get()));
    }
  }

  void unpack(const Packed& packed) override {
    if (packed.in_place) return;
    nccl::ReplicaSet& set = engine_.replicas();
    for (std::size_t r = 0; r < packed.data.size(); ++r) {
      cuda::DeviceGuard on(packed.devices[r]);
      cuda::unpack(packed.data[r], descs_[r].device, descs_[r].count, descs_[r].largest, set.stream(engine_, r));
    }
  }

  void mark_broken(const std::string& reason) noexcept override { engine_.mark_broken(reason); }

 protected:
  std::unique_ptr<plan::Level> make_staged(const host::Algorithm& algorithm, plan::Group group) override {
    return nccl::make_staged_level(engine_, algorithm, group);
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

  // Every rank's replica devices, by rank (collective, bounded by the call's
  // deadline). The MPI buffers are members, so that a gather given up at
  // the deadline (the backend is then broken) never writes into freed memory.
  std::vector<std::vector<int>> gather_devices(const std::vector<int>& mine) {
    const MPI_Comm comm = engine_.comm();
    int size = 1;
    STRATA_CHECK_MPI(MPI_Comm_size(comm, &size));
    host::Transport bounded(comm, engine_.deadline(), engine_.info(), engine_.workspace());
    Gathered& g = *gathered_;
    g.count = int(mine.size());
    g.counts.assign(std::size_t(size), 0);
    MPI_Request request = MPI_REQUEST_NULL;
    STRATA_CHECK_MPI(MPI_Iallgather(&g.count, 1, MPI_INT, g.counts.data(), 1, MPI_INT, comm, &request));
    bounded.wait_collective(request);
    g.offsets.assign(std::size_t(size), 0);
    int total = 0;
    for (int r = 0; r < size; ++r) g.offsets[std::size_t(r)] = total, total += g.counts[std::size_t(r)];
    g.mine = mine;
    g.all.assign(std::size_t(total), -1);
    STRATA_CHECK_MPI(MPI_Iallgatherv(g.mine.data(), g.count, MPI_INT, g.all.data(), g.counts.data(),
                                     g.offsets.data(), MPI_INT, comm, &request));
    bounded.wait_collective(request);
    std::vector<std::vector<int>> table(static_cast<std::size_t>(size));
    for (int r = 0; r < size; ++r)
      table[std::size_t(r)].assign(g.all.begin() + g.offsets[std::size_t(r)],
                                   g.all.begin() + g.offsets[std::size_t(r)] + g.counts[std::size_t(r)]);
    return table;
  }

  nccl::Engine engine_;
  int visible_ = 0;
  std::vector<int> devices_;  // the open call's replica devices
  std::vector<std::vector<int>> host_table_;  // every rank's replica devices, from replica_ranks_usable
  // gather_devices' MPI buffers, leaked rather than freed once broken.
  struct Gathered {
    int count = 0;
    std::vector<int> counts, offsets, mine, all;
  };
  std::unique_ptr<Gathered> gathered_ = std::make_unique<Gathered>();
  cuda::DeviceBuffer descs0_;
  std::vector<Descriptors> descs_;
};

nccl::Engine& engine_of(Backend& backend) { return static_cast<NcclBackend&>(backend).engine(); }

}  // namespace

std::unique_ptr<plan::Level> make_nccl_level(Backend& backend, plan::Group group) {
  return nccl::make_nccl_level(engine_of(backend), group);
}

std::unique_ptr<plan::Level> make_psgpu_level(Backend& backend, plan::Group group) {
  return nccl::make_psgpu_level(engine_of(backend), group);
}

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

std::unique_ptr<Backend> make_backend(MPI_Comm comm, const topo::NodeSplit& split, int device,
                                      std::vector<topo::GpuRow> rows) {
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
  return std::make_unique<NcclBackend>(comm, split, device, std::move(rows));
}

topo::CudaProbe probe_devices() {
  topo::CudaProbe probe;
  if (!device_available(&probe.problem)) return probe;
  int count = 0;
  cudaGetDeviceCount(&count);
  for (int device = 0; device < count; ++device) {
    char bus[32] = {};
    int mode = -1;
    if (cudaDeviceGetPCIBusId(bus, int(sizeof bus), device) != cudaSuccess) {
      cudaGetLastError();  // not sticky: later calls must see their own errors
      probe = {};
      probe.problem = fmt::format("cudaDeviceGetPCIBusId failed for CUDA device {}", device);
      return probe;
    }
    if (cudaDeviceGetAttribute(&mode, cudaDevAttrComputeMode, device) != cudaSuccess) {
      cudaGetLastError();
      mode = -1;
    }
    probe.bus_ids.emplace_back(bus);
    probe.modes.push_back(mode);
  }
  return probe;
}

}  // namespace strata::gpu
