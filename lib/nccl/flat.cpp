// NCCL's own collectives, and reduce-scatter / all-gather into the uneven
// slices strata's hierarchy uses (even_slice over `owners` <= ranks): native
// ncclReduceScatter / ncclAllGather when the slices are equal and every
// rank owns one, otherwise grouped ncclReduce / ncclBroadcast per slice.
#include <nccl.h>

#include "cuda/check.hpp"
#include "nccl/algorithms.hpp"
#include "nccl/replicas.hpp"
#include "util/slice.hpp"

namespace strata::nccl {
namespace {

ncclDataType_t to_nccl(DataType dtype) {
  switch (dtype) {
    case DataType::f32: return ncclFloat32;
    case DataType::f64: return ncclFloat64;
    case DataType::f16: return ncclFloat16;
    case DataType::bf16: return ncclBfloat16;
    case DataType::i8: return ncclInt8;
    case DataType::u8: return ncclUint8;
    case DataType::i32: return ncclInt32;
    case DataType::u32: return ncclUint32;
    case DataType::i64: return ncclInt64;
    case DataType::u64: return ncclUint64;
  }
  return ncclFloat32;
}

ncclRedOp_t to_nccl(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum:
    case ReduceOp::mean: return ncclSum;  // mean: sum here, the backend divides (integers truncate)
    case ReduceOp::prod: return ncclProd;
    case ReduceOp::min: return ncclMin;
    case ReduceOp::max: return ncclMax;
  }
  return ncclSum;
}

// One rooted NCCL call per non-empty even slice s (root: its owner s), all
// in one group: the uneven-slice fallback of reduce-scatter and all-gather.
template <typename Call>
void per_slice(Engine& e, Comm& comm, const plan::Job& job, int owners, const char* what, const util::Deadline& d,
               const plan::CallInfo& info, Call&& call) {
  STRATA_CHECK_NCCL(ncclGroupStart());
  ncclResult_t rc = ncclSuccess;
  for (int s = 0; s < owners && rc == ncclSuccess; ++s) {
    const util::Slice slice = util::even_slice(job.count, std::size_t(owners), std::size_t(s));
    if (slice.count > 0) rc = call(s, slice);
  }
  const ncclResult_t end = ncclGroupEnd();
  e.enqueued(comm, rc != ncclSuccess ? rc : end, what, d, info);
}

}  // namespace

void nccl_all_reduce(Engine& e, Comm& comm, const plan::Job& job, const util::Deadline& d, const plan::CallInfo& info) {
  e.enqueued(comm,
             ncclAllReduce(job.in, job.out, job.count, to_nccl(job.dtype), to_nccl(job.op), comm.get(), e.stream()),
             "ncclAllReduce", d, info);
}

void nccl_reduce(Engine& e, Comm& comm, const plan::Job& job, const util::Deadline& d, const plan::CallInfo& info) {
  // NCCL wants a receive buffer on the root only.
  e.enqueued(comm,
             ncclReduce(job.in, job.out, job.count, to_nccl(job.dtype), to_nccl(job.op), job.root, comm.get(),
                        e.stream()),
             "ncclReduce", d, info);
}

void nccl_broadcast(Engine& e, Comm& comm, const plan::Job& job, const util::Deadline& d, const plan::CallInfo& info) {
  e.enqueued(comm, ncclBroadcast(job.out, job.out, job.count, to_nccl(job.dtype), job.root, comm.get(), e.stream()),
             "ncclBroadcast", d, info);
}

void nccl_replica_all_reduce(Engine& e, std::span<const int> devices, std::span<void* const> buffers,
                             const plan::Job& job, const util::Deadline& d, const plan::CallInfo& info) {
  ReplicaSet& set = e.replicas();
  const std::span<const ncclComm_t> comms = set.world(e, devices, d, info);
  ncclResult_t rc = ncclGroupStart();
  for (std::size_t r = 0; r < buffers.size() && rc == ncclSuccess; ++r)
    rc = ncclAllReduce(buffers[r], buffers[r], job.count, to_nccl(job.dtype), to_nccl(job.op), comms[r],
                       set.stream(e, r));
  const ncclResult_t end = ncclGroupEnd();
  if (rc == ncclSuccess) rc = end;
  // Non-blocking communicators: each may still be enqueueing; settle all.
  for (ncclComm_t comm : comms) {
    e.enqueued(comm, rc, "ncclAllReduce (replicas, grouped)", d, info);
    if (rc == ncclSuccess) break;
  }
}

void nccl_reduce_scatter(Engine& e, Comm& comm, const plan::Job& job, int owners, const util::Deadline& d,
                         const plan::CallInfo& info) {
  const std::size_t element = dtype_size(job.dtype);
  const auto* in = static_cast<const std::byte*>(job.in);
  auto* out = static_cast<std::byte*>(job.out);
  if (owners == comm.size() && job.count % std::size_t(owners) == 0) {
    const std::size_t each = job.count / std::size_t(owners);
    // Out of place into my slice of out: in place only when NCCL's layout
    // matches ours (recvbuff == sendbuff + rank * each), which it does here.
    e.enqueued(comm,
               ncclReduceScatter(in, out + std::size_t(comm.rank()) * each * element, each, to_nccl(job.dtype),
                                 to_nccl(job.op), comm.get(), e.stream()),
               "ncclReduceScatter", d, info);
    return;
  }
  per_slice(e, comm, job, owners, "ncclReduce (grouped reduce-scatter)", d, info, [&](int s, util::Slice slice) {
    return ncclReduce(in + slice.offset * element, out + slice.offset * element, slice.count, to_nccl(job.dtype),
                      to_nccl(job.op), s, comm.get(), e.stream());
  });
}

void nccl_all_gather(Engine& e, Comm& comm, const plan::Job& job, int owners, const util::Deadline& d,
                     const plan::CallInfo& info) {
  const std::size_t element = dtype_size(job.dtype);
  auto* out = static_cast<std::byte*>(job.out);
  if (owners == comm.size() && job.count % std::size_t(owners) == 0) {
    const std::size_t each = job.count / std::size_t(owners);
    e.enqueued(comm,
               ncclAllGather(out + std::size_t(comm.rank()) * each * element, out, each, to_nccl(job.dtype),
                             comm.get(), e.stream()),
               "ncclAllGather", d, info);
    return;
  }
  per_slice(e, comm, job, owners, "ncclBroadcast (grouped all-gather)", d, info, [&](int s, util::Slice slice) {
    std::byte* at = out + slice.offset * element;
    return ncclBroadcast(at, at, slice.count, to_nccl(job.dtype), s, comm.get(), e.stream());
  });
}

}  // namespace strata::nccl
