#include "gpu_plugin/nccl/replicas.hpp"

#include "gpu_plugin/cuda/check.hpp"
#include "gpu_plugin/cuda/kernels.hpp"
#include "gpu_plugin/nccl/convert.hpp"
#include "gpu_plugin/nccl/device_lock.hpp"
#include "gpu_plugin/nccl/engine.hpp"
#include "util/check.hpp"

namespace strata::nccl {

ReplicaSet::~ReplicaSet() {
  if (!aborted_) destroy_world();
}

namespace {

// Lets `device` and `peer` reach each other's memory where the GPUs allow
// it (NVLink, PCIe peer to peer): peer copies then go device to device
// instead of through host memory. Refusals are not errors: the copies work
// either way.
void enable_peer_access(int device, int peer) {
  if (device == peer) return;
  for (const auto& [from, to] : {std::pair{device, peer}, std::pair{peer, device}}) {
    int possible = 0;
    if (cudaDeviceCanAccessPeer(&possible, from, to) != cudaSuccess || !possible) {
      cudaGetLastError();
      continue;
    }
    cuda::DeviceGuard on(from);
    const cudaError_t rc = cudaDeviceEnablePeerAccess(to, 0);
    if (rc != cudaSuccess) cudaGetLastError();  // cudaErrorPeerAccessAlreadyEnabled, or refused: not an error
  }
}

}  // namespace

void ReplicaSet::arrange(Engine& engine, std::span<const int> devices) {
  home_is_replica0_ = devices.empty() || devices[0] == engine.device();
  if (slots_.size() < devices.size()) slots_.resize(devices.size());
  for (std::size_t r = has_slot(0) ? 0 : 1; r < devices.size(); ++r) {
    std::unique_ptr<Slot>& s = slots_[r];
    if (s && s->device == devices[r]) continue;
    // A slot made for another device: its work finished with the call that
    // used it (each call ends waiting for every replica stream).
    cuda::DeviceGuard guard(devices[r]);
    s = std::make_unique<Slot>();
    s->device = devices[r];
    s->stream = std::make_unique<cuda::Stream>();
    s->ready = std::make_unique<cuda::Event>();
    enable_peer_access(engine.device(), devices[r]);
  }
}

ReplicaSet::Slot& ReplicaSet::slot(std::size_t r) { return *slots_.at(r); }

cudaStream_t ReplicaSet::stream(Engine& engine, std::size_t r) {
  return has_slot(r) ? slots_.at(r)->stream->get() : engine.stream();
}

std::span<const ncclComm_t> ReplicaSet::world(Engine& engine, const std::vector<std::vector<int>>& all) {
  if (!world_.empty() && world_devices_ == all) return world_;
  destroy_world();
  int rank = 0;
  STRATA_CHECK_MPI(MPI_Comm_rank(engine.comm(), &rank));
  world_ = create_comms(engine.comm(), all[std::size_t(rank)], "replica", util::Deadline(topo::setup_seconds()));
  world_devices_ = all;
  return world_;
}

void ReplicaSet::combine(Engine& engine, const gpu::Packed& packed, ReduceOp op, std::size_t replicas) {
  const std::size_t bytes = packed.count * dtype_size(packed.dtype);
  if (replicas <= 1 && packed.home == packed.data[0]) return;
  void* incoming = replicas > 1 ? engine.device_scratch(0, bytes) : nullptr;
  bool first = packed.home != packed.data[0];  // a home of its own starts as replica 0's copy
  for (std::size_t r = 0; r < replicas; ++r) {
    if (!has_slot(r)) continue;  // replica 0 on the engine's device is the home already
    Slot& s = slot(r);
    s.ready->record(s.stream->get());
    STRATA_CHECK_CUDA(cudaStreamWaitEvent(engine.stream(), s.ready->get(), 0));
    STRATA_CHECK_CUDA(cudaMemcpyPeerAsync(first ? packed.home : incoming, engine.device(), packed.data[r],
                                          packed.devices[r], bytes, engine.stream()));
    if (!first) cuda::reduce(packed.home, packed.home, incoming, packed.count, packed.dtype, op, engine.stream());
    first = false;
  }
}

void ReplicaSet::spread(Engine& engine, const gpu::Packed& packed) {
  if (packed.data.size() == 1 && !has_slot(0)) return;  // the home is the only replica
  const std::size_t bytes = packed.count * dtype_size(packed.dtype);
  cuda::Event& done = engine.event(0);
  done.record(engine.stream());
  for (std::size_t r = 0; r < packed.data.size(); ++r) {
    if (!has_slot(r)) continue;
    Slot& s = slot(r);
    STRATA_CHECK_CUDA(cudaStreamWaitEvent(s.stream->get(), done.get(), 0));
    STRATA_CHECK_CUDA(cudaMemcpyPeerAsync(packed.data[r], packed.devices[r], packed.home, engine.device(), bytes,
                                          s.stream->get()));
  }
}

void ReplicaSet::all_reduce(Engine& engine, const std::vector<std::vector<int>>& all, const gpu::Packed& packed,
                            ReduceOp op) {
  const std::span<const ncclComm_t> comms = world(engine, all);
  const ncclRedOp_t red = to_nccl(op, packed.dtype);
  ncclResult_t rc = ncclSuccess, end = ncclSuccess;
  {
    const auto issuing = lock_devices(packed.devices);
    rc = ncclGroupStart();
    for (std::size_t r = 0; r < packed.data.size() && rc == ncclSuccess; ++r)
      rc = ncclAllReduce(packed.data[r], packed.data[r], packed.count, to_nccl(packed.dtype), red, comms[r],
                         stream(engine, r));
    end = ncclGroupEnd();
  }
  if (rc == ncclSuccess) rc = end;
  // Non-blocking communicators: each may still be enqueueing; settle all.
  for (ncclComm_t comm : comms) {
    engine.enqueued(comm, rc, "ncclAllReduce (replicas, grouped)");
    if (rc == ncclSuccess) break;
  }
}

void ReplicaSet::join(Engine& engine) {
  for (const auto& s : slots_) {
    if (!s) continue;
    s->ready->record(s->stream->get());
    STRATA_CHECK_CUDA(cudaStreamWaitEvent(engine.stream(), s->ready->get(), 0));
  }
}

bool ReplicaSet::idle() const {
  for (const auto& s : slots_)
    if (s && !s->stream->done()) return false;
  return true;
}

std::string ReplicaSet::async_error() const {
  for (ncclComm_t comm : world_) {
    if (!comm) continue;
    ncclResult_t state = ncclSuccess;
    if (ncclCommGetAsyncError(comm, &state) != ncclSuccess) state = ncclSystemError;
    if (state != ncclSuccess && state != ncclInProgress) return ncclGetErrorString(state);
  }
  return "";
}

void ReplicaSet::abort() {
  if (!aborted_)
    for (ncclComm_t comm : world_)
      if (comm) ncclCommAbort(comm);
  aborted_ = true;
}

void ReplicaSet::abandon() {
  for (auto& s : slots_)
    if (s) s->packed.abandon(), s->descs.abandon();
}

std::vector<ncclComm_t> ReplicaSet::release_world() {
  std::vector<ncclComm_t> released;
  if (!aborted_) released.swap(world_);
  world_.clear();
  world_devices_.clear();
  return released;
}

void ReplicaSet::destroy_world() {
  close_all(release_world(), util::Deadline(kTeardownSeconds));
}

}  // namespace strata::nccl
