#include "gpu_plugin/nccl/packer.hpp"

#include <algorithm>
#include <cstring>

#include "gpu_plugin/cuda/check.hpp"
#include "gpu_plugin/nccl/replicas.hpp"
#include "util/deadline.hpp"

namespace strata::nccl {
namespace {

// A replica's pack layout: non-empty pieces in order, each at a 16-byte
// aligned offset so that the pack kernel and the reductions use vector
// loads (the padding between pieces travels but is never read back).
std::vector<cuda::PackDesc> describe(const gpu::GpuReplicaPack& replica, DataType dtype) {
  const std::size_t element = dtype_size(dtype);
  std::vector<cuda::PackDesc> descs;
  std::size_t offset = 0;
  for (const gpu::GpuPiece& piece : replica.pieces) {
    if (piece.count == 0) continue;
    descs.push_back({piece.data, piece.count * element, offset});
    offset += (piece.count * element + 15) / 16 * 16;
  }
  return descs;
}

std::size_t packed_bytes(const std::vector<cuda::PackDesc>& descs) {
  return descs.empty() ? 0 : (descs.back().offset + descs.back().bytes + 15) / 16 * 16;
}

std::size_t largest_piece(const std::vector<cuda::PackDesc>& descs) {
  std::size_t largest = 0;
  for (const cuda::PackDesc& d : descs) largest = std::max(largest, d.bytes);
  return largest;
}

}  // namespace

gpu::Packed Packer::pack(Engine& engine, const gpu::GpuPack& pack, std::span<const int> devices) {
  gpu::Packed out;
  out.devices.assign(devices.begin(), devices.end());
  out.dtype = pack.dtype;
  const std::size_t replicas = pack.replicas.size();
  std::vector<std::vector<cuda::PackDesc>> layouts;
  for (const gpu::GpuReplicaPack& replica : pack.replicas) layouts.push_back(describe(replica, pack.dtype));
  const std::size_t element = dtype_size(pack.dtype);
  ReplicaSet& set = engine.replicas();
  if (replicas == 1 && layouts[0].size() == 1 && pack.lands_here && !set.has_slot(0)) {
    // One piece of one replica: reduce it where it lies.
    out.data = {layouts[0][0].ptr};
    out.home = out.data[0];
    out.count = layouts[0][0].bytes / element;
    out.in_place = true;
    return out;
  }
  const std::size_t bytes = packed_bytes(layouts[0]);
  out.count = bytes / element;
  descs_.resize(replicas);
  cuda::Retired& retired = engine.retired();
  const bool captured = engine.capturing();  // (one replica, on the engine's device: Engine::open)
  for (std::size_t r = 0; r < replicas; ++r) {
    cuda::DeviceGuard on(devices[r]);
    const std::vector<cuda::PackDesc>& host = layouts[r];
    const std::size_t table = host.size() * sizeof(cuda::PackDesc);
    const bool own = set.has_slot(r);  // else replica 0, packed straight into the engine's home buffer
    cuda::DeviceBuffer& device_descs = own ? set.slot(r).descs : descs0_;
    out.data.push_back(own ? set.slot(r).packed.get(bytes, retired) : engine.device_scratch(2, bytes));
    void* device_table = captured ? engine.captured(table, false) : device_descs.get(table, retired);
    descs_[r] = {static_cast<cuda::PackDesc*>(device_table), host.size(), largest_piece(host)};
    void* pinned = captured ? engine.captured(table, true) : table_for(engine, r, table);
    std::memcpy(pinned, host.data(), table);
    const cudaStream_t stream = set.stream(engine, r);
    STRATA_CHECK_CUDA(cudaMemcpyAsync(descs_[r].device, pinned, table, cudaMemcpyHostToDevice, stream));
    if (!captured) tables_[r][next_]->uploaded = engine.mark(stream, devices[r]);
    cuda::pack(out.data[r], descs_[r].device, descs_[r].count, descs_[r].largest, stream);
  }
  next_ = (next_ + 1) % kTables;
  out.home = set.has_slot(0) ? engine.device_scratch(2, bytes) : out.data[0];
  return out;
}

void* Packer::table_for(Engine& engine, std::size_t r, std::size_t bytes) {
  if (tables_.size() <= r) tables_.resize(r + 1);
  std::vector<std::unique_ptr<Table>>& ring = tables_[r];
  if (ring.size() < kTables) ring.resize(kTables);
  std::unique_ptr<Table>& table = ring[next_];
  if (!table) table = std::make_unique<Table>();
  if (table->uploaded.valid()) {
    // The upload that read it last must have run before the host writes it.
    util::Backoff backoff(util::Backoff::Patience::device);
    while (!engine.passed(table->uploaded)) backoff.pause();
    engine.release(table->uploaded);
    table->uploaded = {};
  }
  return table->pinned.get(bytes, engine.retired());
}

void Packer::unpack(Engine& engine, const gpu::Packed& packed) {
  if (packed.in_place) return;
  ReplicaSet& set = engine.replicas();
  for (std::size_t r = 0; r < packed.data.size(); ++r) {
    cuda::DeviceGuard on(packed.devices[r]);
    cuda::unpack(packed.data[r], descs_[r].device, descs_[r].count, descs_[r].largest, set.stream(engine, r));
  }
}

void Packer::abandon() {
  descs0_.abandon();
  for (auto& ring : tables_)
    for (auto& table : ring)
      if (table) table->pinned.abandon();
}

}  // namespace strata::nccl
