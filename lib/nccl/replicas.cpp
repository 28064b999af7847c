#include "nccl/replicas.hpp"

#include "util/check.hpp"
#include "cuda/check.hpp"
#include "nccl/engine.hpp"

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
