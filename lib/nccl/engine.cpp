#include "nccl/engine.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "cuda/check.hpp"
#include "nccl/replicas.hpp"
#include "strata/errors.hpp"
#include "util/check.hpp"
#include "util/where.hpp"

namespace strata::nccl {
namespace {

// Restores the current device on scope exit without throwing (destructors).
struct QuietDeviceGuard {
  int previous = -1;
  explicit QuietDeviceGuard(int device) {
    if (cudaGetDevice(&previous) != cudaSuccess) previous = -1;
    cudaSetDevice(device);
  }
  ~QuietDeviceGuard() {
    if (previous >= 0) cudaSetDevice(previous);
  }
};

}  // namespace

Engine::Engine(MPI_Comm comm, const topo::NodeSplit& split, int device, std::vector<topo::GpuRow> rows)
    : comm_(comm), split_(split), device_(device), rows_(std::move(rows)) {
  cuda::DeviceGuard guard(device_);  // the caller's current device stays theirs
  stream_ = std::make_unique<cuda::Stream>();
  replicas_ = std::make_unique<ReplicaSet>();
}

Engine::~Engine() { shut_down(); }

bool Engine::shut_down() noexcept {
  if (shut_down_) return *shut_down_;
  QuietDeviceGuard guard(device_);
  // One bound for the whole teardown: a peer that never arrives, or an NCCL
  // that cannot finalize because of it, must not hang the destructor, nor
  // cost the bound once per communicator.
  const util::Deadline bound(kTeardownSeconds);
  const bool idle = broken_.empty() && drained(bound);
  if (broken_.empty() && !idle)
    abort_all("the GPU work of the last call did not finish within 10 s of the communicator's end");
  if (!idle) {
    // Aborted work may still reference these buffers: leak them on purpose.
    retired_.abandon();
    for (auto& b : device_buffers_) b.abandon();
    for (auto& b : pinned_) b.abandon();
    for (auto& b : staging_) b->abandon();
    workspace_.abandon();
    replicas_->abandon();
  }
  // Every communicator not aborted is finalized at once and settles within
  // what is left of the bound.
  std::vector<ncclComm_t> open = replicas_->release_world();
  for (auto& c : comms_)
    if (c)
      if (const ncclComm_t comm = c->release()) open.push_back(comm);
  close_all(open, bound);
  replicas_.reset();
  for (auto& c : comms_) c.reset();
  shut_down_ = idle;
  return idle;
}

void Engine::open(const util::Deadline& deadline, const plan::CallInfo& info, void* producer,
                  std::span<const int> devices) {
  ensure_usable();
  deadline_ = &deadline;
  info_ = info;
  STRATA_CHECK_CUDA(cudaGetDevice(&previous_device_));
  if (previous_device_ != device_) STRATA_CHECK_CUDA(cudaSetDevice(device_));
  // Replica streams exist before anything is ordered on them. The streams
  // to order: the engine's, and each replica slot's (on its device).
  replicas_->arrange(*this, devices);
  std::vector<std::pair<cudaStream_t, int>> streams = {{stream_->get(), device_}};
  for (std::size_t r = 0; r < devices.size(); ++r)
    if (replicas_->has_slot(r)) streams.emplace_back(replicas_->stream(*this, r), devices[r]);
  const auto event_on = [&](int device) -> cuda::Event& {
    if (producer_events_.size() <= std::size_t(device)) producer_events_.resize(std::size_t(device) + 1);
    if (!producer_events_[std::size_t(device)]) {
      cuda::DeviceGuard on(device);
      producer_events_[std::size_t(device)] = std::make_unique<cuda::Event>();
    }
    return *producer_events_[std::size_t(device)];
  };
  if (producer) {
    // The caller's stream: everything strata enqueues waits for what it
    // holds now (an event is recorded on the stream's own device).
    const auto stream = static_cast<cudaStream_t>(producer);
    int device = device_;
    STRATA_CHECK_CUDA(cudaStreamGetDevice(stream, &device));
    cuda::Event& produced = event_on(device);
    {
      cuda::DeviceGuard on(device);
      produced.record(stream);
    }
    for (const auto& [ours, on] : streams) STRATA_CHECK_CUDA(cudaStreamWaitEvent(ours, produced.get(), 0));
    return;
  }
  // The default: each replica's stream waits for its device's legacy
  // default stream (where cudaMemcpy, kernels launched on stream 0 and
  // PyTorch's default stream put their work), which itself follows every
  // blocking stream of that device.
  for (const auto& [ours, device] : streams) {
    cuda::Event& produced = event_on(device);
    {
      cuda::DeviceGuard on(device);
      produced.record(cudaStreamLegacy);
    }
    STRATA_CHECK_CUDA(cudaStreamWaitEvent(ours, produced.get(), 0));
  }
}

void Engine::close() noexcept {
  if (previous_device_ >= 0 && previous_device_ != device_) cudaSetDevice(previous_device_);
  previous_device_ = -1;
  deadline_ = nullptr;
}

MPI_Comm Engine::mpi(plan::Group group) const {
  switch (group) {
    case plan::Group::world: return comm_;
    case plan::Group::node: return split_.node;
    case plan::Group::cross: return split_.cross;
  }
  return comm_;
}

Comm& Engine::nccl(plan::Group group) {
  std::unique_ptr<Comm>& comm = comms_[int(group)];
  if (!comm) {
    static constexpr const char* names[] = {"whole-communicator", "node-local", "cross-node"};
    comm = std::make_unique<Comm>(mpi(group), names[int(group)], device_, util::Deadline(topo::setup_seconds()));
  }
  return *comm;
}

void* Engine::staging(std::size_t index, std::size_t bytes) {
  while (staging_.size() <= index) staging_.push_back(std::make_unique<cuda::PinnedBuffer>());
  return staging_[index]->get(bytes, retired_);
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

void Engine::abort_all(const std::string& reason) noexcept {
  if (broken_.empty()) broken_ = reason;
  for (auto& c : comms_)
    if (c) c->abort();
  if (replicas_) replicas_->abort();  // gone once shut down
}

void Engine::mark_broken(const std::string& reason) noexcept {
  abort_all(reason);
  // What this call queued before the failure (pack kernels, copies; the
  // aborted NCCL operations end) may still read or write the caller's
  // tensors: let it finish, within a bound, before the error reaches a
  // caller who may free them. A stream that errs or never drains is left.
  if (replicas_) drained(util::Deadline(kDrainSeconds));
}

bool Engine::drained(const util::Deadline& bound) noexcept {
  util::Backoff backoff;
  try {
    while (!(stream_->done() && replicas_->idle())) {
      if (bound.expired()) return false;
      backoff.pause();
    }
    return true;
  } catch (const std::exception&) {
    return false;  // a stream in error never drains
  }
}

void Engine::expire() {
  const std::string what = fmt::format(
      "strata [{}]: {} #{} ({} bytes, {}) did not finish within {} s on GPU {}; NCCL cannot say which peer is "
      "missing. The NCCL communicators were aborted and this communicator refuses further calls",
      util::where(), info_.collective, info_.sequence, info_.bytes, info_.algorithm, deadline_->seconds(), device_);
  mark_broken(what);
  throw DeadlineExceeded(what, {});
}

void Engine::check_async() {
  for (auto& c : comms_) {
    if (!c) continue;
    ncclResult_t state = ncclSuccess;
    if (ncclCommGetAsyncError(c->get(), &state) != ncclSuccess) state = ncclSystemError;
    if (state != ncclSuccess && state != ncclInProgress) {
      mark_broken(fmt::format("{} #{}: NCCL error on the {} communicator: {}", info_.collective, info_.sequence,
                              c->name(), ncclGetErrorString(state)));
      cuda::throw_nccl_error(state, "ncclCommGetAsyncError", __FILE__, __LINE__);
    }
  }
  if (const std::string error = replicas_->async_error(); !error.empty()) {
    mark_broken(fmt::format("{} #{}: NCCL error on the replica communicator: {}", info_.collective, info_.sequence,
                            error));
    throw BackendError(broken_, "NCCL", 0, util::hostname(), util::world_rank());
  }
}

void Engine::enqueued(ncclComm_t comm, ncclResult_t rc, const char* call) {
  if (rc == ncclSuccess) {
    // An enqueue that returned after the deadline (its host thread held up
    // inside NCCL) ends the call as the wait would have: the peers gave up
    // at the deadline, and one that finished this late against their
    // abandoned operations must not pass for a success.
    if (deadline_->expired()) expire();
    return;
  }
  if (rc != ncclInProgress) {
    mark_broken(fmt::format("{} #{}: {} failed: {}", info_.collective, info_.sequence, call, ncclGetErrorString(rc)));
    cuda::throw_nccl_error(rc, call, __FILE__, __LINE__);
  }
  bool expired = false;
  const ncclResult_t state = settle(comm, *deadline_, expired);
  if (expired) expire();
  if (state != ncclSuccess) {
    mark_broken(
        fmt::format("{} #{}: {} failed: {}", info_.collective, info_.sequence, call, ncclGetErrorString(state)));
    cuda::throw_nccl_error(state, call, __FILE__, __LINE__);
  }
}

void Engine::wait(cuda::Event* event) {
  util::Backoff backoff;
  while (!(event ? event->done() : stream_->done() && replicas_->idle())) {
    check_async();
    if (deadline_->expired()) expire();
    backoff.pause();
  }
  check_async();
  if (!event) retired_.release();  // nothing enqueued before can still use it
}

}  // namespace strata::nccl
