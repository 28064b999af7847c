#include "gpu_plugin/nccl/comm.hpp"

#include <fmt/format.h>

#include <memory>

#include "gpu_plugin/cuda/check.hpp"
#include "gpu_plugin/nccl/device_lock.hpp"
#include "gpu_plugin/cuda/stream.hpp"
#include "strata/errors.hpp"
#include "util/abandoned.hpp"
#include "util/agree.hpp"
#include "util/check.hpp"
#include "util/where.hpp"

namespace strata::nccl {
namespace {

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

// Starts this member's NCCL ranks (non-blocking), one group when there are
// several, each on its device; the caller's current device stays. Returns
// the first failure ("" when none); ranks started before it stay in
// `comms` for the caller to abort.
std::string init_ranks(std::span<const int> devices, int size, int rank, const ncclUniqueId& id,
                       std::vector<ncclComm_t>& comms) {
  const int count = int(devices.size());
  int previous = -1;
  if (cudaGetDevice(&previous) != cudaSuccess) previous = -1, cudaGetLastError();
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  std::string failure;
  const bool grouped = count > 1;
  // Non-blocking: the calls return at once, so the devices' locks are held
  // only while they are made (the creation settles after, lock-free).
  const auto issuing = lock_devices(devices);
  if (grouped)
    if (const ncclResult_t rc = ncclGroupStart(); rc != ncclSuccess)
      return fmt::format("ncclGroupStart failed: {}", ncclGetErrorString(rc));
  for (int i = 0; i < count && failure.empty(); ++i) {
    const int device = devices[std::size_t(i)];
    if (const cudaError_t rc = cudaSetDevice(device); rc != cudaSuccess) {
      failure = fmt::format("cudaSetDevice({}) failed: {} ({})", device, cudaGetErrorString(rc), cudaGetErrorName(rc));
      cudaGetLastError();
      break;
    }
    const ncclResult_t rc = ncclCommInitRankConfig(&comms[std::size_t(i)], size * count, id, rank * count + i,
                                                   &config);
    if (rc != ncclSuccess && rc != ncclInProgress)
      failure = fmt::format("ncclCommInitRankConfig failed: {}", ncclGetErrorString(rc));
  }
  if (grouped)
    if (const ncclResult_t end = ncclGroupEnd(); end != ncclSuccess && end != ncclInProgress && failure.empty())
      failure = fmt::format("ncclGroupEnd failed: {}", ncclGetErrorString(end));
  if (previous >= 0) cudaSetDevice(previous);
  return failure;
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

namespace {

// The lock of the device `comm` drives (NCCL's rule for threads).
std::unique_lock<std::mutex> lock_device_of(ncclComm_t comm) {
  int device = -1;
  if (ncclCommCuDevice(comm, &device) != ncclSuccess) device = -1;
  return lock_device(device);
}

}  // namespace

void close_all(std::span<const ncclComm_t> comms, const util::Deadline& bound) {
  // Finalize flushes outstanding work: start it everywhere first.
  std::vector<ncclComm_t> finalizing;
  for (ncclComm_t comm : comms) {
    if (!comm) continue;
    const ncclResult_t rc = [&] {
      const auto issuing = lock_device_of(comm);
      return ncclCommFinalize(comm);
    }();
    if (rc == ncclSuccess || rc == ncclInProgress) finalizing.push_back(comm);
    else ncclCommAbort(comm);
  }
  util::Backoff backoff;
  while (!finalizing.empty()) {
    for (auto it = finalizing.begin(); it != finalizing.end();) {
      ncclResult_t state = ncclSuccess;
      if (ncclCommGetAsyncError(*it, &state) != ncclSuccess) state = ncclSystemError;
      if (state == ncclInProgress) {
        ++it;
        continue;
      }
      if (state == ncclSuccess) {
        const auto issuing = lock_device_of(*it);
        ncclCommDestroy(*it);
      } else {
        ncclCommAbort(*it);
      }
      it = finalizing.erase(it);
    }
    if (finalizing.empty()) return;
    if (bound.expired()) {
      for (ncclComm_t comm : finalizing) ncclCommAbort(comm);
      return;
    }
    backoff.pause();
  }
}

std::vector<ncclComm_t> create_comms(MPI_Comm mpi, std::span<const int> devices, const std::string& name,
                                     const util::Deadline& bound) {
  int rank = 0, size = 1;
  STRATA_CHECK_MPI(MPI_Comm_rank(mpi, &rank));
  STRATA_CHECK_MPI(MPI_Comm_size(mpi, &size));

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
  // Nothing in this block throws: a failure is handed to the agreement,
  // so every member hears of it at once, and the group is ended whatever
  // happened inside it (an open group would hold every later NCCL call of
  // this thread).
  if (const std::string failure = init_ranks(devices, size, rank, id, comms); !failure.empty())
    step.fail(util::Agreement::Kind::backend, fmt::format("{}: {}", util::where(), failure));
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
  if (!aborted_ && comm_) close_all(std::span(&comm_, 1), util::Deadline(kTeardownSeconds));
}

ncclComm_t Comm::release() {
  const ncclComm_t comm = aborted_ ? nullptr : comm_;
  comm_ = nullptr;
  return comm;
}

void Comm::abort() {
  if (!aborted_ && comm_) ncclCommAbort(comm_);
  aborted_ = true;
}

}  // namespace strata::nccl
