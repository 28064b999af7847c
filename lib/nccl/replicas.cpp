#include "nccl/replicas.hpp"

#include <fmt/format.h>

#include "util/check.hpp"
#include "util/where.hpp"
#include "cuda/check.hpp"
#include "nccl/engine.hpp"
#include "strata/errors.hpp"

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

std::span<const ncclComm_t> ReplicaSet::world(Engine& engine, std::span<const int> devices,
                                              const util::Deadline& deadline, const plan::CallInfo& info) {
  if (!world_.empty() && world_devices_ == std::vector<int>(devices.begin(), devices.end())) return world_;
  destroy_world();
  host::Transport bounded(engine.comm(), deadline, info, engine.workspace());
  const int replicas = int(devices.size());

  // Every rank must hold the same number of replicas: NCCL ranks are
  // numbered rank x replicas + replica.
  int counts[2] = {replicas, -replicas};
  MPI_Request request = MPI_REQUEST_NULL;
  STRATA_CHECK_MPI(MPI_Iallreduce(MPI_IN_PLACE, counts, 2, MPI_INT, MPI_MIN, engine.comm(), &request));
  bounded.wait_collective(request);
  if (counts[0] != -counts[1])
    throw Mismatch(fmt::format("strata [{}]: {} #{}: ranks hold between {} and {} CUDA replicas; every rank must "
                               "pass the same number (num_gpus_per_worker)",
                               util::where(), info.collective, info.sequence, counts[0], -counts[1]));
  ensure_distinct_gpus(bounded, devices, "replica", info);

  ncclUniqueId id{};
  if (bounded.rank() == 0) STRATA_CHECK_NCCL(ncclGetUniqueId(&id));
  STRATA_CHECK_MPI(MPI_Ibcast(&id, sizeof id, MPI_BYTE, 0, engine.comm(), &request));
  bounded.wait_collective(request);

  // One NCCL rank per device, initialised together in one group.
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  world_.assign(devices.size(), nullptr);
  ncclResult_t failed = ncclSuccess;
  {
    cuda::DeviceGuard guard(devices[0]);
    STRATA_CHECK_NCCL(ncclGroupStart());
    for (int r = 0; r < replicas; ++r) {
      STRATA_CHECK_CUDA(cudaSetDevice(devices[std::size_t(r)]));
      const ncclResult_t rc = ncclCommInitRankConfig(&world_[std::size_t(r)], bounded.size() * replicas, id,
                                                     bounded.rank() * replicas + r, &config);
      if (rc != ncclSuccess && rc != ncclInProgress && failed == ncclSuccess) failed = rc;
    }
    const ncclResult_t end = ncclGroupEnd();
    if (end != ncclSuccess && end != ncclInProgress && failed == ncclSuccess) failed = end;
  }
  for (ncclComm_t comm : world_) {
    if (failed != ncclSuccess || !comm) break;
    bool expired = false;
    const ncclResult_t state = settle(comm, deadline, expired);
    if (expired) {
      abort();
      throw DeadlineExceeded(fmt::format("strata [{}]: {} #{}: creating the replica NCCL communicator did not "
                                         "finish within {} s; aborted",
                                         util::where(), info.collective, info.sequence, deadline.seconds()),
                             {});
    }
    if (state != ncclSuccess) failed = state;
  }
  if (failed != ncclSuccess) {
    abort();
    cuda::throw_nccl_error(failed, "ncclCommInitRankConfig (replicas, grouped)", __FILE__, __LINE__);
  }
  world_devices_.assign(devices.begin(), devices.end());
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
