// NCCL's entry points, as strata calls them, with NCCL's rules enforced:
// one rank per GPU (keyed on host identity and PCI bus id), several ranks
// of one process only inside one group, ncclInProgress settled before the
// next call on a communicator, buffers of the communicator's device and
// large enough, NCCL's in-place forms only, the stream on the
// communicator's device, every communicator's calls cross-checked across
// ranks as they run, and calls for one device serialized across threads
// (threads.hpp). An operation on a capturing stream is recorded into the
// capture and made anew, with its number, at each cudaGraphLaunch.
#include <fmt/format.h>
#include <unistd.h>

#include <cstring>
#include <string_view>
#include <thread>

#include "capture.hpp"
#include "comm.hpp"
#include "devices.hpp"
#include "faults.hpp"
#include "group.hpp"
#include "memory.hpp"
#include "report.hpp"
#include "threads.hpp"

using namespace gpu_double;
using namespace gpu_double::nccl;

namespace {

ncclResult_t misuse(const char* call, ncclResult_t code, const std::string& what) {
  violation(call, what);
  set_last_error_text(fmt::format("{}: {}", call, what));
  return code;
}

// A communicator that may take a new call now.
ncclComm* usable(const char* call, ncclComm_t handle) {
  ncclComm* comm = comm_of(call, handle);
  if (!comm) return nullptr;
  if (comm->settle_pending) {
    misuse(call, ncclInvalidUsage,
           fmt::format("{}: an earlier call on it returned ncclInProgress, and ncclCommGetAsyncError has not yet "
                       "reported it done (NCCL requires that before the next call)",
                       comm->label));
    return nullptr;
  }
  if (comm->life == ncclComm::Life::joining) {
    misuse(call, ncclInvalidUsage, fmt::format("{} is not initialised yet", comm->label));
    return nullptr;
  }
  if (comm->life == ncclComm::Life::finalizing || comm->life == ncclComm::Life::finalized) {
    misuse(call, ncclInvalidUsage, fmt::format("{} was finalized", comm->label));
    return nullptr;
  }
  return comm;
}

// The stream an operation goes to: the communicator's device's.
Stream* stream_for(const char* call, ncclComm* comm, cudaStream_t handle) {
  Stream* stream = handle == nullptr || handle == cudaStreamLegacy ? &legacy_stream(comm->device)
                                                                   : stream_of(call, handle);
  if (!stream) return nullptr;
  if (stream->device() != comm->device) {
    violation(call, fmt::format("{} is on device {}, but {} drives device {}", stream->name(), stream->device(),
                                comm->label, comm->device));
    return nullptr;
  }
  if (stream->held.load() > 0) {
    violation(call, fmt::format("{} still waits for NCCL work that {} held (ncclInProgress not yet settled)",
                                stream->name(), stream->held_by.load()));
    return nullptr;
  }
  if (check_legacy(call, *stream) != cudaSuccess) return nullptr;
  return stream;
}

bool device_buffer(const char* call, const char* what, ncclComm* comm, const void* p, std::size_t bytes) {
  return bytes == 0 || device_bytes(call, what, p, bytes, comm->device) != nullptr;
}

// NCCL's buffers either coincide as its in-place form says, or are apart.
bool placement(const char* call, ncclComm* comm, const void* send, std::size_t send_bytes, const void* recv,
               std::size_t recv_bytes, const void* in_place_send) {
  if (send == in_place_send) return true;
  if (!range_of(send, send_bytes).overlaps(range_of(recv, recv_bytes))) return true;
  violation(call, fmt::format("{}: sendbuff {} ({} bytes) and recvbuff {} ({} bytes) overlap, but not in NCCL's "
                              "in-place form (sendbuff = {})",
                              comm->label, send, send_bytes, static_cast<const void*>(recv), recv_bytes, in_place_send));
  return false;
}

bool op_supported(const char* call, ncclRedOp_t op) {
  if (op == ncclSum || op == ncclProd || op == ncclMin || op == ncclMax) return true;
  violation(call, fmt::format("reduction op {} is not simulated by the test double", int(op)));
  return false;
}

// An nccl-stall fault holds the calling thread here.
void stall(const std::string& what) {
  double seconds = 0;
  if (fault_now(Fault::nccl_stall, &seconds)) {
    trace(fmt::format("stalling {} s in {}", seconds, what));
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  }
}

// An operation call: made and enqueued now, or on a capturing stream
// recorded as a recipe that every graph launch makes anew.
ncclResult_t enqueue(const char* call, ncclComm* comm, cudaStream_t handle, Recipe make, const std::string& what) {
  Stream* stream = stream_for(call, comm, handle);
  if (!stream) return ncclInvalidArgument;
  if (capturing(*stream)) {
    if (const int e = comm->error.load(); e != ncclSuccess) return ncclResult_t(e);
    stall(what);
    return add_captured(call, stream, comm, std::move(make), what);
  }
  std::unique_ptr<Work> work = make();
  if (const int e = comm->error.load(); e != ncclSuccess) return ncclResult_t(e);
  stall(work->label());
  work->hang = fault_now(Fault::nccl_hang);
  work->error = fault_now(Fault::nccl_error);
  return add_work(call, stream, std::move(work));
}

ncclResult_t collective(const char* call, CollKind kind, const void* send, void* recv, std::size_t count,
                        ncclDataType_t dtype, int op, int root, ncclComm_t handle, cudaStream_t stream) {
  ncclComm* comm = usable(call, handle);
  if (!comm) return ncclInvalidUsage;
  Inside inside(call, comm->device);
  const std::size_t element = nccl_element_bytes(dtype);
  if (element == 0) return misuse(call, ncclInvalidArgument, fmt::format("datatype {} is not simulated", int(dtype)));
  if (op >= 0 && !op_supported(call, ncclRedOp_t(op))) return ncclInvalidArgument;
  if ((kind == CollKind::reduce || kind == CollKind::broadcast) && (root < 0 || root >= comm->nranks))
    return misuse(call, ncclInvalidArgument, fmt::format("root {} of {}", root, comm->label));
  const std::size_t n = std::size_t(comm->nranks), bytes = count * element;
  const std::size_t send_bytes = kind == CollKind::reduce_scatter ? n * bytes : bytes;
  const std::size_t recv_bytes = kind == CollKind::all_gather ? n * bytes : bytes;
  const bool sends = kind != CollKind::broadcast || comm->rank == root;
  const bool receives = kind != CollKind::reduce || comm->rank == root;
  if ((sends && !device_buffer(call, "sendbuff", comm, send, send_bytes)) ||
      (receives && !device_buffer(call, "recvbuff", comm, recv, recv_bytes)))
    return ncclInvalidArgument;
  if (sends && receives && send_bytes && recv_bytes) {
    const auto* s = static_cast<const std::byte*>(send);
    const auto* r = static_cast<const std::byte*>(recv);
    const void* in_place = kind == CollKind::reduce_scatter ? static_cast<const void*>(r - comm->rank * bytes)
                           : kind == CollKind::all_gather   ? static_cast<const void*>(r + comm->rank * bytes)
                                                            : recv;
    if (kind == CollKind::reduce_scatter && s + comm->rank * bytes == r) in_place = send;
    if (!placement(call, comm, send, send_bytes, recv, recv_bytes, in_place)) return ncclInvalidArgument;
  }
  return enqueue(
      call, comm, stream, [=] { return gpu_double::nccl::collective(comm, kind, send, recv, count, dtype, op, root); },
      fmt::format("{}(count {}, datatype {}) on {}", call, count, int(dtype), comm->label));
}

// ncclSend (call "ncclSend") or ncclRecv of `count` elements at `buffer`.
ncclResult_t point_to_point(const char* call, void* buffer, std::size_t count, ncclDataType_t dtype, int peer,
                            ncclComm_t handle, cudaStream_t stream) {
  const bool sending = std::string_view(call) == "ncclSend";
  ncclComm* comm = usable(call, handle);
  if (!comm) return ncclInvalidUsage;
  Inside inside(call, comm->device);
  if (peer < 0 || peer >= comm->nranks)
    return misuse(call, ncclInvalidArgument, fmt::format("peer {} of {}", peer, comm->label));
  if (nccl_element_bytes(dtype) == 0) return misuse(call, ncclInvalidArgument, "datatype not simulated");
  if (!device_buffer(call, sending ? "sendbuff" : "recvbuff", comm, buffer, count * nccl_element_bytes(dtype)))
    return ncclInvalidArgument;
  return enqueue(
      call, comm, stream,
      [=]() -> std::unique_ptr<Work> {
        return sending ? gpu_double::nccl::send(comm, buffer, count, dtype, peer)
                       : gpu_double::nccl::receive(comm, buffer, count, dtype, peer);
      },
      fmt::format("{}(count {}, datatype {}, peer {}) on {}", call, count, int(dtype), peer, comm->label));
}

ncclResult_t init(const char* call, ncclComm_t* out, int nranks, const ncclUniqueId& id, int rank,
                  const ncclConfig_t* config) {
  *out = nullptr;
  if (config && (config->magic != 0xcafebeef || config->size != sizeof(ncclConfig_t)))
    return misuse(call, ncclInvalidArgument, "the config was not set up with NCCL_CONFIG_INITIALIZER");
  const bool blocking = !config || config->blocking == NCCL_CONFIG_UNDEF_INT || config->blocking != 0;
  if (nranks < 1 || rank < 0 || rank >= nranks)
    return misuse(call, ncclInvalidArgument, fmt::format("rank {} of nranks {}", rank, nranks));
  const int device = current_device();
  if (!valid_device(device))
    return misuse(call, ncclUnhandledCudaError, fmt::format("the current CUDA device {} does not exist", device));
  Inside inside(call, device);
  if (const std::string why = claim_rank(id, rank, group_id()); !why.empty())
    return misuse(call, ncclInvalidUsage, why);
  std::string error;
  Clique* clique = Clique::open(id, nranks, &error);
  if (!clique) return misuse(call, ncclInvalidArgument, error);
  ncclComm* comm = new_comm();
  comm->clique = clique;
  comm->rank = rank;
  comm->nranks = nranks;
  comm->device = device;
  comm->blocking = blocking;
  comm->sends.assign(std::size_t(nranks), 0);
  comm->receives.assign(std::size_t(nranks), 0);
  comm->init_group = group_id();
  comm->label = fmt::format("NCCL rank {} of {} on device {} (communicator {})", rank, nranks, device, clique->name());
  comm->init_fails = fault_now(Fault::nccl_init);
  *out = comm;
  return add_init(call, comm);
}

}  // namespace

extern "C" {

ncclResult_t ncclGetVersion(int* version) {
  *version = NCCL_VERSION_CODE;
  return ncclSuccess;
}

ncclResult_t ncclGetUniqueId(ncclUniqueId* id) {
  trace("ncclGetUniqueId");
  make_unique_id(id);
  return ncclSuccess;
}

ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank, ncclConfig_t* config) {
  trace("ncclCommInitRankConfig");
  return init("ncclCommInitRankConfig", comm, nranks, id, rank, config);
}

ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank) {
  trace("ncclCommInitRank");
  return init("ncclCommInitRank", comm, nranks, id, rank, nullptr);
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t handle, ncclResult_t* state) {
  ncclComm* comm = comm_of("ncclCommGetAsyncError", handle);
  if (!comm) return ncclInvalidArgument;
  *state = state_of("ncclCommGetAsyncError", comm);
  return ncclSuccess;
}

ncclResult_t ncclCommFinalize(ncclComm_t handle) {
  ncclComm* comm = usable("ncclCommFinalize", handle);
  if (!comm) return ncclInvalidUsage;
  Inside inside("ncclCommFinalize", comm->device);
  record_lifecycle("ncclCommFinalize", comm);
  comm->life = ncclComm::Life::finalizing;
  comm->finalize_hangs = fault_now(Fault::nccl_finalize);
  if (comm->blocking) {
    wait_until([&] { return comm->running.load() == 0 && !comm->finalize_hangs; }, "ncclCommFinalize",
               [&] { return comm->label + " to finish its operations"; });
    comm->life = ncclComm::Life::finalized;
    return ncclSuccess;
  }
  comm->settle_pending = true;
  return ncclInProgress;
}

ncclResult_t ncclCommDestroy(ncclComm_t handle) {
  ncclComm* comm = comm_of("ncclCommDestroy", handle);
  if (!comm) return ncclInvalidArgument;
  Inside inside("ncclCommDestroy", comm->device);
  if (comm->held)
    violation("ncclCommDestroy", fmt::format("{} is destroyed while work of an ncclInProgress return is still held",
                                             comm->label));
  record_lifecycle("ncclCommDestroy", comm);
  drop_held(comm);
  wait_until([&] { return comm->running.load() == 0; }, "ncclCommDestroy",
             [&] { return comm->label + " to finish its operations"; });
  comm->life = ncclComm::Life::destroyed;
  comm->clique->close();
  return ncclSuccess;
}

ncclResult_t ncclCommAbort(ncclComm_t handle) {
  ncclComm* comm = comm_of("ncclCommAbort", handle);
  if (!comm) return ncclInvalidArgument;
  record_lifecycle("ncclCommAbort", comm);
  comm->aborted = true;
  comm->life = ncclComm::Life::aborted;
  drop_held(comm);
  comm->clique->ring_doorbell();  // running operations see the abort and end
  comm->clique->close();
  return ncclSuccess;
}

ncclResult_t ncclCommCount(const ncclComm_t handle, int* count) {
  ncclComm* comm = comm_of("ncclCommCount", handle);
  if (!comm) return ncclInvalidArgument;
  *count = comm->nranks;
  return ncclSuccess;
}

ncclResult_t ncclCommCuDevice(const ncclComm_t handle, int* device) {
  ncclComm* comm = comm_of("ncclCommCuDevice", handle);
  if (!comm) return ncclInvalidArgument;
  *device = comm->device;
  return ncclSuccess;
}

ncclResult_t ncclCommUserRank(const ncclComm_t handle, int* rank) {
  ncclComm* comm = comm_of("ncclCommUserRank", handle);
  if (!comm) return ncclInvalidArgument;
  *rank = comm->rank;
  return ncclSuccess;
}

ncclResult_t ncclGroupStart() {
  trace("ncclGroupStart");
  if (group_depth() == 0) begin_span();
  group_start();
  return ncclSuccess;
}

ncclResult_t ncclGroupEnd() {
  trace("ncclGroupEnd");
  const ncclResult_t result = group_end("ncclGroupEnd");
  if (group_depth() == 0) end_span();
  return result;
}

ncclResult_t ncclAllReduce(const void* send, void* recv, size_t count, ncclDataType_t dtype, ncclRedOp_t op,
                           ncclComm_t comm, cudaStream_t stream) {
  return collective("ncclAllReduce", CollKind::all_reduce, send, recv, count, dtype, op, -1, comm, stream);
}

ncclResult_t ncclReduce(const void* send, void* recv, size_t count, ncclDataType_t dtype, ncclRedOp_t op, int root,
                        ncclComm_t comm, cudaStream_t stream) {
  return collective("ncclReduce", CollKind::reduce, send, recv, count, dtype, op, root, comm, stream);
}

ncclResult_t ncclBroadcast(const void* send, void* recv, size_t count, ncclDataType_t dtype, int root,
                           ncclComm_t comm, cudaStream_t stream) {
  return collective("ncclBroadcast", CollKind::broadcast, send, recv, count, dtype, -1, root, comm, stream);
}

ncclResult_t ncclReduceScatter(const void* send, void* recv, size_t count, ncclDataType_t dtype, ncclRedOp_t op,
                               ncclComm_t comm, cudaStream_t stream) {
  return collective("ncclReduceScatter", CollKind::reduce_scatter, send, recv, count, dtype, op, -1, comm, stream);
}

ncclResult_t ncclAllGather(const void* send, void* recv, size_t count, ncclDataType_t dtype, ncclComm_t comm,
                           cudaStream_t stream) {
  return collective("ncclAllGather", CollKind::all_gather, send, recv, count, dtype, -1, -1, comm, stream);
}

ncclResult_t ncclSend(const void* buffer, size_t count, ncclDataType_t dtype, int peer, ncclComm_t handle,
                      cudaStream_t stream) {
  return point_to_point("ncclSend", const_cast<void*>(buffer), count, dtype, peer, handle, stream);
}

ncclResult_t ncclRecv(void* buffer, size_t count, ncclDataType_t dtype, int peer, ncclComm_t handle,
                      cudaStream_t stream) {
  return point_to_point("ncclRecv", buffer, count, dtype, peer, handle, stream);
}

const char* ncclGetErrorString(ncclResult_t result) {
  switch (result) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError: return "internal error - please report this issue to the NCCL developers";
    case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    default: return "unknown result code";
  }
}

const char* ncclGetLastError(ncclComm_t) { return last_error_text(); }

}  // extern "C"
