#include "nccl/engine.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <chrono>
#include <cstring>

#include "util/check.hpp"
#include "util/where.hpp"
#include "nccl/replicas.hpp"
#include "cuda/check.hpp"
#include "strata/errors.hpp"

namespace strata::nccl {
namespace {

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return text;
}

}  // namespace

ncclResult_t settle(ncclComm_t comm, const util::Deadline& deadline, bool& expired) {
  util::Backoff backoff;
  ncclResult_t state = ncclInProgress;
  while (true) {
    if (ncclCommGetAsyncError(comm, &state) != ncclSuccess) return ncclSystemError;
    if (state != ncclInProgress) return state;
    if (deadline.expired()) {
      expired = true;
      return ncclInProgress;
    }
    backoff.pause();
  }
}

void close(ncclComm_t comm) {
  // Finalize flushes outstanding work; bounded so teardown never hangs.
  const ncclResult_t rc = ncclCommFinalize(comm);
  bool expired = false;
  const util::Deadline bound(10.0);
  if ((rc != ncclSuccess && rc != ncclInProgress) || settle(comm, bound, expired) != ncclSuccess || expired) {
    ncclCommAbort(comm);
    return;
  }
  ncclCommDestroy(comm);
}

void ensure_distinct_gpus(host::Transport& bounded, std::span<const int> devices, const char* name,
                          const plan::CallInfo& info) {
  constexpr std::size_t kIdBytes = 32;
  const std::size_t mine = devices.size() * kIdBytes;
  std::vector<char> ids(mine, '\0');
  for (std::size_t d = 0; d < devices.size(); ++d)
    STRATA_CHECK_CUDA(cudaDeviceGetPCIBusId(&ids[d * kIdBytes], int(kIdBytes), devices[d]));
  std::vector<char> all(mine * std::size_t(bounded.size()));
  MPI_Request request = MPI_REQUEST_NULL;
  STRATA_CHECK_MPI(MPI_Iallgather(ids.data(), int(mine), MPI_CHAR, all.data(), int(mine), MPI_CHAR, bounded.comm(),
                                  &request));
  bounded.wait_collective(request);
  // NCCL rank k is member k / devices.size(), device k % devices.size().
  const std::size_t total = all.size() / kIdBytes;
  for (std::size_t a = 0; a < total; ++a)
    for (std::size_t b = a + 1; b < total; ++b)
      if (std::strncmp(&all[a * kIdBytes], &all[b * kIdBytes], kIdBytes) == 0) {
        const std::size_t n = devices.size();
        const std::string who = n == 1 ? fmt::format("its ranks {} and {}", a, b)
                                : a / n == b / n
                                    ? fmt::format("rank {}'s replicas {} and {}", a / n, a % n, b % n)
                                    : fmt::format("rank {} (replica {}) and rank {} (replica {})", a / n, a % n,
                                                  b / n, b % n);
        throw Unavailable(fmt::format(
            "strata [{}]: {} #{} needs the {} NCCL communicator, but {} both drive GPU {}; NCCL needs one GPU per "
            "NCCL rank. Run one rank per GPU (or set STRATA_GPU_MAP, or give each replica its own device), or use "
            "an algorithm that needs no NCCL communicator here, such as psgpu or xring",
            util::where(), info.collective, info.sequence, name, who, lower(&all[a * kIdBytes])));
      }
}

Comm::Comm(Engine& engine, MPI_Comm mpi, const char* name, const util::Deadline& deadline,
           const plan::CallInfo& info)
    : name_(name) {
  STRATA_CHECK_MPI(MPI_Comm_rank(mpi, &rank_));
  STRATA_CHECK_MPI(MPI_Comm_size(mpi, &size_));
  // NCCL refuses two ranks on one GPU; say so plainly (all ranks agree).
  // Non-blocking MPI polled against the deadline: a missing peer must not
  // park this rank outside the call's bound.
  host::Transport bounded(mpi, rank_, size_, deadline, info, engine.workspace());
  const int device = engine.device();
  ensure_distinct_gpus(bounded, std::span(&device, 1), name, info);
  MPI_Request request = MPI_REQUEST_NULL;

  ncclUniqueId id{};
  if (rank_ == 0) STRATA_CHECK_NCCL(ncclGetUniqueId(&id));
  STRATA_CHECK_MPI(MPI_Ibcast(&id, sizeof id, MPI_BYTE, 0, mpi, &request));
  bounded.wait_collective(request);
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  const ncclResult_t rc = ncclCommInitRankConfig(&comm_, size_, id, rank_, &config);
  if (rc != ncclSuccess && rc != ncclInProgress) STRATA_CHECK_NCCL(rc);
  bool expired = false;
  const ncclResult_t state = settle(comm_, deadline, expired);
  if (expired || state != ncclSuccess) {
    abort();
    if (expired)
      throw DeadlineExceeded(
          fmt::format("strata [{}]: {} #{}: creating the {} NCCL communicator did not finish within {} s; aborted",
                      util::where(), info.collective, info.sequence, name, deadline.seconds()),
          {});
    cuda::throw_nccl_error(state, "ncclCommInitRankConfig", __FILE__, __LINE__);
  }
}

Comm::~Comm() {
  if (!aborted_ && comm_) close(comm_);
}

void Comm::abort() {
  if (!aborted_ && comm_) ncclCommAbort(comm_);
  aborted_ = true;
}

Engine::Engine(MPI_Comm comm, const topo::NodeSplit& split, int device)
    : comm_(comm), split_(split), device_(device) {
  STRATA_CHECK_CUDA(cudaSetDevice(device_));
  stream_ = std::make_unique<cuda::Stream>();
  replicas_ = std::make_unique<ReplicaSet>();
}

Engine::~Engine() {
  if (!broken_.empty()) {
    // Aborted work may still reference these buffers: leak them on purpose.
    for (auto& b : device_buffers_) b.abandon();
    for (auto& b : pinned_) b.abandon();
    workspace_.abandon();
    replicas_->abandon();
  } else if (stream_) {
    cudaStreamSynchronize(stream_->get());
  }
  replicas_.reset();
  cross_.reset();
  node_.reset();
  world_.reset();
}

Comm& Engine::world(const util::Deadline& deadline, const plan::CallInfo& info) {
  if (!world_) world_ = std::make_unique<Comm>(*this, comm_, "whole-job", deadline, info);
  return *world_;
}
Comm& Engine::node(const util::Deadline& deadline, const plan::CallInfo& info) {
  if (!node_) node_ = std::make_unique<Comm>(*this, split_.node, "node-local", deadline, info);
  return *node_;
}
Comm& Engine::cross(const util::Deadline& deadline, const plan::CallInfo& info) {
  if (!cross_) cross_ = std::make_unique<Comm>(*this, split_.cross, "cross-node", deadline, info);
  return *cross_;
}

cuda::Event& Engine::event(std::size_t index) {
  while (events_.size() <= index) events_.push_back(std::make_unique<cuda::Event>());
  return *events_[index];
}

void Engine::ensure_usable() const {
  if (!broken_.empty())
    throw PeerFailure(fmt::format("strata [{}]: the GPU backend of this communicator is broken by an earlier "
                                  "failure ({}); create a new communicator before calling again",
                                  util::where(), broken_));
}

void Engine::mark_broken(const std::string& reason) {
  if (broken_.empty()) broken_ = reason;
  for (Comm* c : {world_.get(), node_.get(), cross_.get()})
    if (c) c->abort();
  replicas_->abort();
}

void Engine::expire(const util::Deadline& deadline, const plan::CallInfo& info) {
  const std::string what = fmt::format(
      "strata [{}]: {} #{} ({} bytes, {}) did not finish within {} s on GPU {}; NCCL cannot say which peer is "
      "missing. The NCCL communicators were aborted and this communicator refuses further calls",
      util::where(), info.collective, info.sequence, info.bytes, info.algorithm, deadline.seconds(), device_);
  mark_broken(what);
  throw DeadlineExceeded(what, {});
}

void Engine::check_async(const plan::CallInfo& info) {
  for (Comm* c : {world_.get(), node_.get(), cross_.get()}) {
    if (!c) continue;
    ncclResult_t state = ncclSuccess;
    if (ncclCommGetAsyncError(c->get(), &state) != ncclSuccess) state = ncclSystemError;
    if (state != ncclSuccess && state != ncclInProgress) {
      mark_broken(fmt::format("{} #{}: NCCL error on the {} communicator: {}", info.collective, info.sequence,
                              c->name(), ncclGetErrorString(state)));
      cuda::throw_nccl_error(state, "ncclCommGetAsyncError", __FILE__, __LINE__);
    }
  }
  if (const std::string error = replicas_->async_error(); !error.empty()) {
    mark_broken(fmt::format("{} #{}: NCCL error on the replica communicator: {}", info.collective, info.sequence,
                            error));
    throw BackendError(broken_, "NCCL", 0, util::hostname(), util::world_rank());
  }
}

void Engine::enqueued(ncclComm_t comm, ncclResult_t rc, const char* call, const util::Deadline& deadline,
                      const plan::CallInfo& info) {
  if (rc == ncclSuccess) return;
  if (rc != ncclInProgress) {
    mark_broken(fmt::format("{} #{}: {} failed: {}", info.collective, info.sequence, call, ncclGetErrorString(rc)));
    cuda::throw_nccl_error(rc, call, __FILE__, __LINE__);
  }
  bool expired = false;
  const ncclResult_t state = settle(comm, deadline, expired);
  if (expired) expire(deadline, info);
  if (state != ncclSuccess) {
    mark_broken(fmt::format("{} #{}: {} failed: {}", info.collective, info.sequence, call, ncclGetErrorString(state)));
    cuda::throw_nccl_error(state, call, __FILE__, __LINE__);
  }
}

void Engine::wait(const util::Deadline& deadline, const plan::CallInfo& info, cuda::Event* event) {
  util::Backoff backoff;
  while (!(event ? event->done() : stream_->done() && replicas_->idle())) {
    check_async(info);
    if (deadline.expired()) expire(deadline, info);
    backoff.pause();
  }
}

}  // namespace strata::nccl
