#include "gpu_plugin/nccl/group_call.hpp"

#include <vector>

#include "gpu_plugin/cuda/check.hpp"
#include "gpu_plugin/nccl/convert.hpp"
#include "gpu_plugin/nccl/device_lock.hpp"

namespace strata::nccl {
namespace {

using Kind = gpu::NcclOp::Kind;

bool reducing(Kind kind) { return kind == Kind::all_reduce || kind == Kind::reduce || kind == Kind::reduce_scatter; }

ncclResult_t call(const gpu::NcclOp& op, ncclRedOp_t red, ncclComm_t comm, cudaStream_t stream) {
  const ncclDataType_t dtype = to_nccl(op.dtype);
  switch (op.kind) {
    case Kind::all_reduce: return ncclAllReduce(op.send, op.recv, op.count, dtype, red, comm, stream);
    case Kind::reduce: return ncclReduce(op.send, op.recv, op.count, dtype, red, op.peer, comm, stream);
    case Kind::broadcast: return ncclBroadcast(op.send, op.recv, op.count, dtype, op.peer, comm, stream);
    case Kind::reduce_scatter: return ncclReduceScatter(op.send, op.recv, op.count, dtype, red, comm, stream);
    case Kind::all_gather: return ncclAllGather(op.send, op.recv, op.count, dtype, comm, stream);
    case Kind::send: return ncclSend(op.send, op.count, dtype, op.peer, comm, stream);
    case Kind::recv: return ncclRecv(op.recv, op.count, dtype, op.peer, comm, stream);
  }
  return ncclInvalidArgument;
}

}  // namespace

void issue(Engine& e, Comm& comm, std::span<const gpu::NcclOp> ops, const char* what) {
  // Every reduction NCCL gets is checked before the group starts.
  std::vector<ncclRedOp_t> reductions(ops.size(), ncclSum);
  for (std::size_t i = 0; i < ops.size(); ++i)
    if (reducing(ops[i].kind)) reductions[i] = to_nccl(ops[i].op, ops[i].dtype);
  ncclResult_t rc = ncclSuccess, end = ncclSuccess;
  {
    const std::unique_lock issuing = lock_device(e.device());
    STRATA_CHECK_NCCL(ncclGroupStart());
    for (std::size_t i = 0; i < ops.size() && rc == ncclSuccess; ++i)
      rc = call(ops[i], reductions[i], comm.get(), e.stream());
    end = ncclGroupEnd();
  }
  e.enqueued(comm, rc != ncclSuccess ? rc : end, what);
}

}  // namespace strata::nccl

