// --baseline nccl, inside strata-bench-cuda.so: one NCCL communicator of
// the whole job, on the rank's device, with its own stream for the blocking
// baseline; the stream-ordered one enqueues on the stream it is given.
#include "nccl_baseline.hpp"

#include <cuda_runtime_api.h>
#include <fmt/format.h>
#include <nccl.h>

#include <stdexcept>

#include "cuda_module.hpp"

namespace bench {
namespace {

void check_cuda(cudaError_t rc, const char* what) {
  if (rc != cudaSuccess)
    throw std::runtime_error(
        fmt::format("--baseline nccl: {} failed: {} ({})", what, cudaGetErrorName(rc), cudaGetErrorString(rc)));
}

void check_nccl(ncclResult_t rc, const char* what) {
  if (rc == ncclSuccess) return;
  const char* detail = ncclGetLastError(nullptr);  // NCCL's own account of the last failure, if it kept one
  throw std::runtime_error(fmt::format("--baseline nccl: {} failed: {}{}{}", what, ncclGetErrorString(rc),
                                       detail && *detail ? ": " : "", detail ? detail : ""));
}

ncclDataType_t nccl_type(strata::DataType dtype) {
  switch (dtype) {
    case strata::DataType::f32: return ncclFloat32;
    case strata::DataType::f64: return ncclFloat64;
    case strata::DataType::f16: return ncclFloat16;
    case strata::DataType::bf16: return ncclBfloat16;
    case strata::DataType::i8: return ncclInt8;
    case strata::DataType::u8: return ncclUint8;
    case strata::DataType::i32: return ncclInt32;
    case strata::DataType::u32: return ncclUint32;
    case strata::DataType::i64: return ncclInt64;
    case strata::DataType::u64: return ncclUint64;
  }
  throw std::logic_error("--baseline nccl: unknown dtype");
}

// mean is timed as a sum, as the MPI baseline does: strata reduces with sum
// and divides, and integer means truncate, which ncclAvg does not promise.
ncclRedOp_t nccl_op(strata::ReduceOp op) {
  switch (op) {
    case strata::ReduceOp::sum:
    case strata::ReduceOp::mean: return ncclSum;
    case strata::ReduceOp::min: return ncclMin;
    case strata::ReduceOp::max: return ncclMax;
    case strata::ReduceOp::prod: return ncclProd;
  }
  throw std::logic_error("--baseline nccl: unknown op");
}

// A member, so that what the constructor made before it threw is released.
struct NcclResources {
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  NcclResources() = default;
  NcclResources(const NcclResources&) = delete;
  NcclResources& operator=(const NcclResources&) = delete;
  ~NcclResources() {
    if (comm) ncclCommDestroy(comm);
    if (stream) cudaStreamDestroy(stream);
  }
};

class NcclComm final : public NcclBaseline {
 public:
  NcclComm(MPI_Comm comm, int device);
  void run(CollectiveKind kind, const Context& ctx, Buffers& b) override;
  void enqueue(CollectiveKind kind, const Context& ctx, Buffers& b, strata::StreamHandle stream) override;

 private:
  // The calls of `kind` on `stream`; `each_tensor`: a batch synchronises
  // `stream` after each tensor's call (the blocking baseline).
  void issue(CollectiveKind kind, const Context& ctx, Buffers& b, cudaStream_t stream, bool each_tensor);
  NcclResources r_;
};

NcclComm::NcclComm(MPI_Comm comm, int device) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  // Rank 0's failure to make an id must not leave the others in MPI_Bcast:
  // the flag travels with the id, and every rank throws together.
  ncclUniqueId id{};
  int id_ok = 1;
  if (rank == 0) id_ok = ncclGetUniqueId(&id) == ncclSuccess;
  MPI_Bcast(&id_ok, 1, MPI_INT, 0, comm);
  if (!id_ok) throw std::runtime_error("--baseline nccl: ncclGetUniqueId failed on rank 0");
  MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, comm);
  check_cuda(cudaSetDevice(device), "cudaSetDevice");
  check_cuda(cudaStreamCreateWithFlags(&r_.stream, cudaStreamNonBlocking), "cudaStreamCreate");
  check_nccl(ncclCommInitRank(&r_.comm, size, id, rank), "ncclCommInitRank");
}

void NcclComm::run(CollectiveKind kind, const Context& ctx, Buffers& b) {
  issue(kind, ctx, b, r_.stream, true);
  check_cuda(cudaStreamSynchronize(r_.stream), "cudaStreamSynchronize");
}

void NcclComm::enqueue(CollectiveKind kind, const Context& ctx, Buffers& b, strata::StreamHandle stream) {
  issue(kind, ctx, b, static_cast<cudaStream_t>(stream), false);
}

void NcclComm::issue(CollectiveKind kind, const Context& ctx, Buffers& b, cudaStream_t stream, bool each_tensor) {
  const ncclRedOp_t op = nccl_op(ctx.op);
  auto count = [](const strata::Tensor& t) { return t.count; };
  switch (kind) {
    case CollectiveKind::all_reduce: {
      const auto& in = b.in()[0];
      check_nccl(ncclAllReduce(in.data, b.out()[0].data, count(in), nccl_type(in.dtype), op, r_.comm, stream),
                 "ncclAllReduce");
      break;
    }
    case CollectiveKind::reduce: {
      // recvbuff is only written on the root; send == recv there is NCCL's in place.
      const auto& in = b.in()[0];
      check_nccl(ncclReduce(in.data, b.out()[0].data, count(in), nccl_type(in.dtype), op, ctx.root, r_.comm, stream),
                 "ncclReduce");
      break;
    }
    case CollectiveKind::broadcast: {
      const auto& t = b.in()[0];
      check_nccl(ncclBroadcast(t.data, t.data, count(t), nccl_type(t.dtype), ctx.root, r_.comm, stream),
                 "ncclBroadcast");
      break;
    }
    case CollectiveKind::reduce_scatter: {
      const auto& in = b.in()[0];
      check_nccl(ncclReduceScatter(in.data, b.out()[0].data, count(b.out()[0]), nccl_type(in.dtype), op, r_.comm,
                                   stream),
                 "ncclReduceScatter");
      break;
    }
    case CollectiveKind::all_gather: {
      const auto& in = b.in()[0];
      check_nccl(ncclAllGather(in.data, b.out()[0].data, count(in), nccl_type(in.dtype), r_.comm, stream),
                 "ncclAllGather");
      break;
    }
    case CollectiveKind::batch:
      // What a framework without a batching library does: one call per
      // tensor, in place, as the MPI baseline does; blocking, each waited
      // for, or stream-ordered, one after the other on the stream.
      for (const auto& t : b.in()) {
        check_nccl(ncclAllReduce(t.data, t.data, count(t), nccl_type(t.dtype), op, r_.comm, stream), "ncclAllReduce");
        if (each_tensor) check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
      }
      break;
  }
}

}  // namespace

namespace cuda {

std::unique_ptr<NcclBaseline> open_nccl_baseline(MPI_Comm comm, int device) {
  return std::make_unique<NcclComm>(comm, device);
}

}  // namespace cuda
}  // namespace bench
