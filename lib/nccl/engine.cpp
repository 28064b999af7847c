#include "nccl/engine.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "cuda/check.hpp"
#include "nccl/replicas.hpp"
#include "strata/errors.hpp"
#include "util/abandoned.hpp"
#include "util/agree.hpp"
#include "util/check.hpp"
#include "util/where.hpp"

namespace strata::nccl {
namespace {

constexpr double kTeardownSeconds = 10;  // a destructor waits at most this long for the GPU

// Waits for a non-blocking MPI collective until `bound` passes.
void wait_bounded(MPI_Request& request, const util::Deadline& bound, const std::string& what) {
  util::Backoff backoff;
  for (;;) {
    int done = 0;
    STRATA_CHECK_MPI(MPI_Test(&request, &done, MPI_STATUS_IGNORE));
    if (done) return;
    if (bound.expired())
      throw DeadlineExceeded(fmt::format("strata [{}]: {} did not finish within its own limit of {} s "
                                         "(STRATA_GPU_SETUP_TIMEOUT): a rank is missing or stuck",
                                         util::where(), what, bound.seconds()),
                             {});
    backoff.pause();
  }
}

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
  const util::Deadline bound(kTeardownSeconds);
  if ((rc != ncclSuccess && rc != ncclInProgress) || settle(comm, bound, expired) != ncclSuccess || expired) {
    ncclCommAbort(comm);
    return;
  }
  ncclCommDestroy(comm);
}

std::vector<ncclComm_t> create_comms(MPI_Comm mpi, std::span<const int> devices, const std::string& name,
                                     const util::Deadline& bound) {
  int rank = 0, size = 1;
  STRATA_CHECK_MPI(MPI_Comm_rank(mpi, &rank));
  STRATA_CHECK_MPI(MPI_Comm_size(mpi, &size));
  const int count = int(devices.size());

  // 1. Rank 0's unique id, or its failure, reaches every member. The id's
  //    buffer is leaked if its broadcast is given up (it may land later).
  auto held = std::make_unique<ncclUniqueId>();
  ncclUniqueId& id = *held;
  {
    util::Agreement step(mpi, fmt::format("creating the {} NCCL communicator (ncclGetUniqueId)", name), bound);
    if (rank == 0)
      if (const ncclResult_t rc = ncclGetUniqueId(&id); rc != ncclSuccess)
        step.fail(util::Agreement::Kind::backend,
                  fmt::format("{}: ncclGetUniqueId failed: {}", util::where(), ncclGetErrorString(rc)));
    step.throw_if_failed();
    MPI_Request request = MPI_REQUEST_NULL;
    STRATA_CHECK_MPI(MPI_Ibcast(&id, sizeof id, MPI_BYTE, 0, mpi, &request));
    try {
      wait_bounded(request, bound, fmt::format("sending the {} NCCL communicator's unique id", name));
    } catch (...) {
      // A collective's request may not be freed: it and its buffer stay
      // behind, reachable and never freed.
      util::keep_forever(held.release());
      throw;
    }
  }

  // 2. Initialise this member's NCCL ranks (one group when there are
  //    several), then poll them; give up early when a peer failed.
  util::Agreement step(mpi, fmt::format("creating the {} NCCL communicator", name), bound);
  std::vector<ncclComm_t> comms(devices.size(), nullptr);
  const auto abort_all = [&comms] {
    for (ncclComm_t& c : comms)
      if (c) ncclCommAbort(c), c = nullptr;
  };
  {
    cuda::DeviceGuard guard(devices[0]);
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    ncclResult_t failed = count > 1 ? ncclGroupStart() : ncclSuccess;
    for (int i = 0; i < count && failed == ncclSuccess; ++i) {
      STRATA_CHECK_CUDA(cudaSetDevice(devices[std::size_t(i)]));
      const ncclResult_t rc = ncclCommInitRankConfig(&comms[std::size_t(i)], size * count, id, rank * count + i,
                                                     &config);
      if (rc != ncclSuccess && rc != ncclInProgress) failed = rc;
    }
    if (count > 1)
      if (const ncclResult_t end = ncclGroupEnd(); end != ncclSuccess && end != ncclInProgress && !failed)
        failed = end;
    if (failed != ncclSuccess)
      step.fail(util::Agreement::Kind::backend,
                fmt::format("{}: ncclCommInitRankConfig failed: {}", util::where(), ncclGetErrorString(failed)));
  }
  util::Backoff backoff;
  while (!step.failed()) {
    bool pending = false;
    for (ncclComm_t c : comms) {
      if (!c) continue;
      ncclResult_t state = ncclSuccess;
      if (ncclCommGetAsyncError(c, &state) != ncclSuccess) state = ncclSystemError;
      if (state == ncclInProgress) {
        pending = true;
      } else if (state != ncclSuccess) {
        step.fail(util::Agreement::Kind::backend, fmt::format("{}: NCCL initialisation failed: {}; NCCL_DEBUG=WARN "
                                                              "says more",
                                                              util::where(), ncclGetErrorString(state)));
        break;
      }
    }
    if (!pending || step.failed() || step.peer_failed()) break;
    if (bound.expired()) {
      step.fail(util::Agreement::Kind::deadline,
                fmt::format("{}: NCCL initialisation did not finish within {} s (STRATA_GPU_SETUP_TIMEOUT)",
                            util::where(), bound.seconds()));
      break;
    }
    backoff.pause();
  }
  // A peer's failure leaves this member's init pending: abort it too.
  try {
    step.throw_if_failed();
  } catch (...) {
    abort_all();
    throw;
  }
  return comms;
}

Comm::Comm(MPI_Comm mpi, const std::string& name, int device, const util::Deadline& bound) : name_(name) {
  STRATA_CHECK_MPI(MPI_Comm_rank(mpi, &rank_));
  STRATA_CHECK_MPI(MPI_Comm_size(mpi, &size_));
  comm_ = create_comms(mpi, std::span(&device, 1), name, bound).front();
}

Comm::~Comm() {
  if (!aborted_ && comm_) close(comm_);
}

void Comm::abort() {
  if (!aborted_ && comm_) ncclCommAbort(comm_);
  aborted_ = true;
}

Engine::Engine(MPI_Comm comm, const topo::NodeSplit& split, int device, std::vector<topo::GpuRow> rows)
    : comm_(comm), split_(split), device_(device), rows_(std::move(rows)) {
  cuda::DeviceGuard guard(device_);  // the caller's current device stays theirs
  stream_ = std::make_unique<cuda::Stream>();
  replicas_ = std::make_unique<ReplicaSet>();
}

Engine::~Engine() {
  QuietDeviceGuard guard(device_);
  bool idle = broken_.empty();
  if (idle) {
    // Bounded: a peer that never arrives must not hang the destructor.
    const util::Deadline bound(kTeardownSeconds);
    util::Backoff backoff;
    try {
      while (!(stream_->done() && replicas_->idle())) {
        if (bound.expired()) {
          idle = false;
          break;
        }
        backoff.pause();
      }
    } catch (const std::exception&) {
      idle = false;
    }
    if (!idle) mark_broken("the GPU work of the last call did not finish within 10 s of the communicator's end");
  }
  if (!idle) {
    // Aborted work may still reference these buffers: leak them on purpose.
    for (auto& b : device_buffers_) b.abandon();
    for (auto& b : pinned_) b.abandon();
    for (auto& b : staging_) b->abandon();
    workspace_.abandon();
    replicas_->abandon();
  }
  replicas_.reset();
  for (auto& c : comms_) c.reset();
}

void Engine::open(const util::Deadline& deadline, const plan::CallInfo& info, void* producer,
                  std::span<const int> devices) {
  ensure_usable();
  deadline_ = &deadline;
  info_ = info;
  STRATA_CHECK_CUDA(cudaGetDevice(&previous_device_));
  if (previous_device_ != device_) STRATA_CHECK_CUDA(cudaSetDevice(device_));
  // Replica streams exist before anything is ordered on them.
  for (std::size_t r = 1; r < devices.size(); ++r) replicas_->slot(r, devices[r]);
  const auto stream_of = [&](std::size_t r) { return replicas_->stream(*this, r); };
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
    for (std::size_t r = 0; r < std::max<std::size_t>(devices.size(), 1); ++r)
      STRATA_CHECK_CUDA(cudaStreamWaitEvent(stream_of(r), produced.get(), 0));
    return;
  }
  // The default: each replica's stream waits for its device's legacy
  // default stream (where cudaMemcpy, kernels launched on stream 0 and
  // PyTorch's default stream put their work), which itself follows every
  // blocking stream of that device.
  for (std::size_t r = 0; r < std::max<std::size_t>(devices.size(), 1); ++r) {
    const int device = r == 0 ? device_ : devices[r];
    cuda::Event& produced = event_on(device);
    {
      cuda::DeviceGuard on(device);
      produced.record(cudaStreamLegacy);
    }
    STRATA_CHECK_CUDA(cudaStreamWaitEvent(stream_of(r), produced.get(), 0));
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
  return staging_[index]->get(bytes);
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

void Engine::mark_broken(const std::string& reason) noexcept {
  if (broken_.empty()) broken_ = reason;
  for (auto& c : comms_)
    if (c) c->abort();
  replicas_->abort();
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
  if (rc == ncclSuccess) return;
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
}

}  // namespace strata::nccl
