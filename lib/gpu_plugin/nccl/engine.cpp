#include "gpu_plugin/nccl/engine.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>

#include "gpu_plugin/cuda/capture.hpp"
#include "gpu_plugin/cuda/check.hpp"
#include "gpu_plugin/cuda/kernels.hpp"
#include "gpu_plugin/nccl/replicas.hpp"
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
  const bool usable = broken_reason().empty();
  const bool idle = usable && drained(bound);
  if (usable && !idle)
    abort_all("the GPU work of the last call did not finish within 10 s of the communicator's end");
  if (!idle) {
    // Aborted work may still reference these buffers: leak them on purpose.
    captured_device_.clear();
    captured_pinned_.clear();
    retired_.abandon();
    for (auto& b : device_buffers_) b.abandon();
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
  // Graphs that captured calls of this engine may not replay from now on:
  // their memory goes with it.
  for (void* p : captured_device_) cudaFree(p);
  for (void* p : captured_pinned_) cudaFreeHost(p);
  captured_device_.clear();
  captured_pinned_.clear();
  for (FenceSlot& slot : fences_) {
    cuda::DeviceGuard on(slot.device);
    slot.event.reset();
  }
  if (gate_word_ && idle) cudaFreeHost(gate_word_);  // (a held stream may still poll it otherwise)
  shut_down_ = idle;
  return idle;
}

void Engine::open(const gpu::CallContext& call, std::span<const int> devices) {
  scope_.lock();
  scope_owner_ = std::this_thread::get_id();
  ensure_usable();
  deadline_ = call.deadline;
  info_ = call.info;
  mode_ = call.mode;
  producer_ = call.producer;
  call_stream_ = nullptr;
  STRATA_CHECK_CUDA(cudaGetDevice(&previous_device_));
  if (previous_device_ != device_) STRATA_CHECK_CUDA(cudaSetDevice(device_));
  if (mode_ == gpu::Mode::captured) {
    // The graph holds the work in the producer stream's own order: nothing
    // to order, and no other stream may join the capture.
    if (devices.size() > 1 || (!devices.empty() && devices[0] != device_))
      throw InvalidArgument(util::located(
          "a call captured into a CUDA graph may not have replicas on other devices than the rank's own"));
    call_stream_ = static_cast<cudaStream_t>(call.producer);
    return;
  }
  // Replica streams exist before anything is ordered on them. The streams
  // to order: the engine's, and each replica slot's (on its device).
  replicas_->arrange(*this, devices);
  std::vector<std::pair<cudaStream_t, int>> streams = {{stream_->get(), device_}};
  for (std::size_t r = 0; r < devices.size(); ++r)
    if (replicas_->has_slot(r)) streams.emplace_back(replicas_->stream(*this, r), devices[r]);
  if (!call.after_producer) {
    // Replica streams follow the engine's, which follows the producer.
    if (streams.size() > 1) {
      cuda::Event& joined = event(0);
      joined.record(stream_->get());
      for (std::size_t i = 1; i < streams.size(); ++i)
        STRATA_CHECK_CUDA(cudaStreamWaitEvent(streams[i].first, joined.get(), 0));
    }
    return;
  }
  if (!call.ready.empty()) {
    // Where the producer was when the call was made: one fence for a given
    // stream (every replica waits for it), else one per replica device.
    std::lock_guard lock(shared_);
    for (std::size_t i = 0; i < streams.size(); ++i) {
      const gpu::Fence fence = call.ready.size() == 1 ? call.ready[0] : call.ready.at(std::min(i, call.ready.size() - 1));
      STRATA_CHECK_CUDA(cudaStreamWaitEvent(streams[i].first, fence_event(fence).get(), 0));
    }
    return;
  }
  if (call.producer) {
    // The caller's stream: everything strata enqueues waits for what it
    // holds now (an event is recorded on the stream's own device).
    const auto stream = static_cast<cudaStream_t>(call.producer);
    int device = device_;
    STRATA_CHECK_CUDA(cudaStreamGetDevice(stream, &device));
    for (const auto& [ours, on] : streams) order_after(ours, stream, device);
    return;
  }
  // The default: each replica's stream waits for its device's legacy
  // default stream (where cudaMemcpy, kernels launched on stream 0 and
  // PyTorch's default stream put their work), which itself follows every
  // blocking stream of that device.
  for (const auto& [ours, device] : streams) order_after(ours, cudaStreamLegacy, device);
}

void Engine::order_after(cudaStream_t stream, cudaStream_t producer, int device) {
  if (producer_events_.size() <= std::size_t(device)) producer_events_.resize(std::size_t(device) + 1);
  std::unique_ptr<cuda::Event>& produced = producer_events_[std::size_t(device)];
  // The engine's device is current within a call: another device's event
  // is made, and its legacy default stream named, with that device current.
  std::optional<cuda::DeviceGuard> on;
  if (device != device_) on.emplace(device);
  if (!produced) produced = std::make_unique<cuda::Event>();
  produced->record(producer);
  STRATA_CHECK_CUDA(cudaStreamWaitEvent(stream, produced->get(), 0));
}

gpu::Fence Engine::enqueued_fence() {
  if (mode_ == gpu::Mode::captured) return {};
  // Every replica stream's work joins the engine's stream, the fence goes
  // after it, and the producer (the caller's stream) waits for the fence.
  replicas_->join(*this);
  const gpu::Fence fence = record_fence(stream_->get(), device_, /*current=*/true);
  if (producer_) {
    std::lock_guard lock(shared_);
    STRATA_CHECK_CUDA(cudaStreamWaitEvent(static_cast<cudaStream_t>(producer_), fence_event(fence).get(), 0));
  }
  return fence;
}

void Engine::close() noexcept {
  if (previous_device_ >= 0 && previous_device_ != device_) cudaSetDevice(previous_device_);
  previous_device_ = -1;
  deadline_ = nullptr;
  call_stream_ = nullptr;
  producer_ = nullptr;
  mode_ = gpu::Mode::blocking;
  if (scope_owner_.load() != std::this_thread::get_id()) return;  // (open() failed before it took the scope)
  if (abort_requested_.exchange(false)) {
    std::string reason;
    {
      std::lock_guard lock(shared_);
      reason = requested_reason_;
    }
    abort_all(reason);
  }
  scope_owner_ = std::thread::id{};
  scope_.unlock();
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
    auto made = std::make_unique<Comm>(mpi(group), names[int(group)], device_, util::Deadline(topo::setup_seconds()));
    std::lock_guard lock(shared_);  // the watcher reads the pointers
    comm = std::move(made);
  }
  return *comm;
}

void* Engine::captured(std::size_t bytes, bool pinned) {
  cuda::RelaxedCapture relaxed;  // an allocation inside a global-mode capture would break it
  void* p = nullptr;
  if (pinned) STRATA_CHECK_CUDA(cudaHostAlloc(&p, bytes ? bytes : 1, cudaHostAllocPortable));
  else STRATA_CHECK_CUDA(cudaMalloc(&p, bytes ? bytes : 1));
  std::lock_guard lock(shared_);
  (pinned ? captured_pinned_ : captured_device_).push_back(p);
  return p;
}

cuda::Event& Engine::fence_event(gpu::Fence fence) { return *fences_.at(fence.index).event; }

gpu::Fence Engine::mark(void* stream, int device) {
  if (!stream) {
    cuda::DeviceGuard on(device);  // the legacy default stream is the current device's
    return record_fence(cudaStreamLegacy, device, /*current=*/true);
  }
  const auto handle = static_cast<cudaStream_t>(stream);
  STRATA_CHECK_CUDA(cudaStreamGetDevice(handle, &device));
  return record_fence(handle, device, /*current=*/false);
}

gpu::Fence Engine::record_fence(cudaStream_t stream, int device, bool current) {
  std::lock_guard lock(shared_);
  std::uint32_t index = gpu::Fence::kNone;
  for (std::size_t i = free_fences_.size(); i-- > 0;)
    if (fences_[free_fences_[i]].device == device) {
      index = free_fences_[i];
      free_fences_.erase(free_fences_.begin() + std::ptrdiff_t(i));
      break;
    }
  if (index == gpu::Fence::kNone) {
    std::optional<cuda::DeviceGuard> on;  // an event belongs to the device current when it is made
    if (!current) on.emplace(device);
    fences_.push_back({device, std::make_unique<cuda::Event>()});
    index = std::uint32_t(fences_.size() - 1);
  }
  try {
    fences_[index].event->record(stream);
  } catch (...) {
    free_fences_.push_back(index);
    throw;
  }
  return {index};
}

bool Engine::passed(gpu::Fence fence) {
  // Any thread may ask, also while another captures a graph in CUDA's
  // global mode, which would forbid a query from a thread in that mode.
  cuda::RelaxedCapture relaxed;
  std::lock_guard lock(shared_);
  return fence_event(fence).done();
}

void Engine::release(gpu::Fence fence) noexcept {
  if (!fence.valid()) return;
  std::lock_guard lock(shared_);
  free_fences_.push_back(fence.index);
}

std::string Engine::async_error() {
  std::lock_guard lock(shared_);  // no abort frees a communicator meanwhile
  for (auto& c : comms_) {
    if (!c || !c->get()) continue;
    ncclResult_t state = ncclSuccess;
    if (ncclCommGetAsyncError(c->get(), &state) != ncclSuccess) state = ncclSystemError;
    if (state != ncclSuccess && state != ncclInProgress)
      return fmt::format("NCCL error on the {} communicator: {}", c->name(), ncclGetErrorString(state));
  }
  if (replicas_)
    if (const std::string error = replicas_->async_error(); !error.empty())
      return fmt::format("NCCL error on the replica communicator: {}", error);
  return "";
}

gpu::Gate Engine::hold(void* stream) {
  const auto handle = static_cast<cudaStream_t>(stream);
  int device = device_;
  STRATA_CHECK_CUDA(cudaStreamGetDevice(handle, &device));
  std::lock_guard lock(shared_);
  if (!gate_word_) {
    void* word = nullptr;
    STRATA_CHECK_CUDA(cudaHostAlloc(&word, sizeof(unsigned int), cudaHostAllocPortable | cudaHostAllocMapped));
    gate_word_ = static_cast<unsigned int*>(word);
    std::atomic_ref<unsigned int>(*gate_word_).store(0, std::memory_order_release);
  }
  const std::uint32_t number = ++gates_made_ == 0 ? ++gates_made_ : gates_made_;  // 0 means "no gate"
  cuda::DeviceGuard on(device);
  cuda::hold_until(gate_word_, number, handle);
  return {number};
}

void Engine::open_gate(gpu::Gate gate) noexcept {
  if (!gate.valid()) return;
  std::lock_guard lock(shared_);
  if (!gate_word_) return;
  std::atomic_ref<unsigned int> word(*gate_word_);
  // Gates open in order: never move the word back.
  if (static_cast<int>(gate.number - word.load(std::memory_order_relaxed)) > 0)
    word.store(gate.number, std::memory_order_release);
}

void Engine::reclaim() noexcept {
  std::unique_lock lock(shared_);
  // A cudaFree waits for the whole device, gate kernels included, which may
  // wait for this very process's progress thread: never while one is held.
  if (gate_word_ && std::atomic_ref<unsigned int>(*gate_word_).load(std::memory_order_acquire) != gates_made_) return;
  lock.unlock();
  // Not while a call is open: it may be arranging replicas or retiring
  // memory its own queued work still uses.
  std::unique_lock scope(scope_, std::try_to_lock);
  if (!scope.owns_lock()) return;
  cuda::RelaxedCapture relaxed;  // (as passed())
  try {
    if (!stream_->done() || !replicas_->idle()) return;
  } catch (const std::exception&) {
    return;  // a stream in error: nothing is freed
  }
  retired_.release();
}

void* Engine::staging(std::size_t index, std::size_t bytes) {
  while (staging_.size() <= index) staging_.push_back(std::make_unique<cuda::PinnedBuffer>());
  return staging_[index]->get(bytes, retired_);
}

cuda::Event& Engine::event(std::size_t index) {
  while (events_.size() <= index) events_.push_back(std::make_unique<cuda::Event>());
  return *events_[index];
}

std::string Engine::broken_reason() const {
  std::lock_guard lock(shared_);
  return broken_;
}

void Engine::ensure_usable() const {
  if (const std::string reason = broken_reason(); !reason.empty())
    throw PeerFailure(fmt::format("strata [{}]: the GPU backend of this communicator is broken by an earlier "
                                  "failure ({}); create a new communicator before calling again",
                                  util::where(), reason));
}

void Engine::abort_all(const std::string& reason) noexcept {
  std::lock_guard lock(shared_);
  if (broken_.empty()) broken_ = reason;
  for (auto& c : comms_)
    if (c) c->abort();
  if (replicas_) replicas_->abort();  // gone once shut down
  // A stream held for a host stage must not wait for ever.
  if (gate_word_) std::atomic_ref<unsigned int>(*gate_word_).store(gates_made_, std::memory_order_release);
}

void Engine::mark_broken(const std::string& reason) noexcept {
  if (scope_owner_.load() != std::this_thread::get_id()) {
    // Another thread drives a call: its communicators must not be aborted
    // under it. Abort now if no call is open, else let the call do it.
    std::unique_lock scope(scope_, std::try_to_lock);
    if (!scope.owns_lock()) {
      {
        std::lock_guard lock(shared_);
        if (requested_reason_.empty()) requested_reason_ = reason;
        if (broken_.empty()) broken_ = reason;  // no new call starts meanwhile
        if (gate_word_) std::atomic_ref<unsigned int>(*gate_word_).store(gates_made_, std::memory_order_release);
      }
      abort_requested_ = true;
      return;
    }
    abort_all(reason);
    if (replicas_) drained(util::Deadline(kDrainSeconds));
    return;
  }
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

void Engine::aborted_elsewhere() {
  abort_requested_ = false;
  std::string reason;
  {
    std::lock_guard lock(shared_);
    reason = requested_reason_;
  }
  mark_broken(reason);
  throw PeerFailure(fmt::format("strata [{}]: {} #{} was given up: {}", util::where(), info_.collective,
                                info_.sequence, reason));
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
    throw BackendError(broken_reason(), "NCCL", 0, util::hostname(), util::world_rank());
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
  util::Backoff backoff(util::Backoff::Patience::device);
  while (!(event ? event->done() : stream_->done() && replicas_->idle())) {
    check_async();
    if (deadline_->expired()) expire();
    if (abort_requested_.load(std::memory_order_relaxed)) aborted_elsewhere();
    backoff.pause();
  }
  check_async();
  if (!event) retired_.release();  // nothing enqueued before can still use it
}

}  // namespace strata::nccl
