#include "nccl/replicas.hpp"

#include "cuda/check.hpp"
#include "cuda/kernels.hpp"
#include "nccl/convert.hpp"
#include "nccl/engine.hpp"
#include "util/check.hpp"

namespace strata::nccl {

ReplicaSet::~ReplicaSet() {
  if (!aborted_) destroy_world();
}

ReplicaSet::Slot& ReplicaSet::slot(std::size_t r, int device) {
  if (slots_.size() < r) slots_.resize(r);
  std::unique_ptr<Slot>& s = slots_[r - 1];
  if (!s || s->device != device) {
    cuda::DeviceGuard guard(device);
    s = std::make_unique<Slot>();
    s->device = device;
    s->stream = std::make_unique<cuda::Stream>();
    s->ready = std::make_unique<cuda::Event>();
  }
  return *s;
}

cudaStream_t ReplicaSet::stream(Engine& engine, std::size_t r) {
  return r == 0 ? engine.stream() : slots_.at(r - 1)->stream->get();
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

void ReplicaSet::combine(Engine& engine, const gpu::Packed& packed, ReduceOp op) {
  const std::size_t bytes = packed.count * dtype_size(packed.dtype);
  void* incoming = engine.device_scratch(0, bytes);
  for (std::size_t r = 1; r < packed.data.size(); ++r) {
    Slot& s = slot(r, packed.devices[r]);
    s.ready->record(s.stream->get());
    STRATA_CHECK_CUDA(cudaStreamWaitEvent(engine.stream(), s.ready->get(), 0));
    STRATA_CHECK_CUDA(cudaMemcpyPeerAsync(incoming, engine.device(), packed.data[r], packed.devices[r], bytes,
                                          engine.stream()));
    cuda::reduce(packed.data[0], packed.data[0], incoming, packed.count, packed.dtype, op, engine.stream());
  }
}

void ReplicaSet::spread(Engine& engine, const gpu::Packed& packed) {
  const std::size_t bytes = packed.count * dtype_size(packed.dtype);
  cuda::Event& done = engine.event(0);
  done.record(engine.stream());
  for (std::size_t r = 1; r < packed.data.size(); ++r) {
    Slot& s = slot(r, packed.devices[r]);
    STRATA_CHECK_CUDA(cudaStreamWaitEvent(s.stream->get(), done.get(), 0));
    STRATA_CHECK_CUDA(cudaMemcpyPeerAsync(packed.data[r], packed.devices[r], packed.data[0], engine.device(), bytes,
                                          s.stream->get()));
  }
}

void ReplicaSet::all_reduce(Engine& engine, const std::vector<std::vector<int>>& all, const gpu::Packed& packed,
                            ReduceOp op) {
  const std::span<const ncclComm_t> comms = world(engine, all);
  const ncclRedOp_t red = to_nccl(op, packed.dtype);
  ncclResult_t rc = ncclGroupStart();
  for (std::size_t r = 0; r < packed.data.size() && rc == ncclSuccess; ++r)
    rc = ncclAllReduce(packed.data[r], packed.data[r], packed.count, to_nccl(packed.dtype), red, comms[r],
                       stream(engine, r));
  const ncclResult_t end = ncclGroupEnd();
  if (rc == ncclSuccess) rc = end;
  // Non-blocking communicators: each may still be enqueueing; settle all.
  for (ncclComm_t comm : comms) {
    engine.enqueued(comm, rc, "ncclAllReduce (replicas, grouped)");
    if (rc == ncclSuccess) break;
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

void ReplicaSet::destroy_world() {
  if (aborted_) return;
  for (ncclComm_t comm : world_)
    if (comm) close(comm);
  world_.clear();
  world_devices_.clear();
}

}  // namespace strata::nccl
