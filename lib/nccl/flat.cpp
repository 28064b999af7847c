// NCCL's own collectives, and reduce-scatter / all-gather into the uneven
// slices strata's hierarchy uses (even_slice over `owners` <= ranks): native
// ncclReduceScatter / ncclAllGather when the slices are equal and every
// rank owns one, otherwise grouped ncclReduce / ncclBroadcast per slice.
// For the ops NCCL reduces differently from strata (floating min/max: NaN),
// exchange_reduce_scatter moves the bytes with NCCL and reduces with
// strata's kernels.
#include <nccl.h>

#include "cuda/check.hpp"
#include "cuda/kernels.hpp"
#include "nccl/algorithms.hpp"
#include "nccl/replicas.hpp"
#include "plan/nan.hpp"
#include "strata/errors.hpp"
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

// NCCL's operator for a job whose op NCCL reduces as strata does.
ncclRedOp_t to_nccl(const plan::Job& job) {
  if (!plan::nccl_reduces(job.op, job.dtype))
    throw BackendError("strata: internal error: a floating min/max reached NCCL's own reduction (it drops NaN)",
                       "NCCL", 0, "", -1);
  switch (job.op) {
    case ReduceOp::sum:
    case ReduceOp::mean: return ncclSum;  // mean: sum here, the finish stage divides (integers truncate)
    case ReduceOp::prod: return ncclProd;
    case ReduceOp::min: return ncclMin;
    case ReduceOp::max: return ncclMax;
  }
  return ncclSum;
}

// One rooted NCCL call per non-empty even slice s (root: its owner s), all
// in one group: the uneven-slice fallback of reduce-scatter and all-gather.
template <typename Call>
void per_slice(Engine& e, Comm& comm, const plan::Job& job, int owners, const char* what, Call&& call) {
  STRATA_CHECK_NCCL(ncclGroupStart());
  ncclResult_t rc = ncclSuccess;
  for (int s = 0; s < owners && rc == ncclSuccess; ++s) {
    const util::Slice slice = util::even_slice(job.count, std::size_t(owners), std::size_t(s));
    if (slice.count > 0) rc = call(s, slice);
  }
  const ncclResult_t end = ncclGroupEnd();
  e.enqueued(comm, rc != ncclSuccess ? rc : end, what);
}

}  // namespace

void nccl_all_reduce(Engine& e, Comm& comm, const plan::Job& job) {
  e.enqueued(comm,
             ncclAllReduce(job.in, job.out, job.count, to_nccl(job.dtype), to_nccl(job), comm.get(), e.stream()),
             "ncclAllReduce");
}

void nccl_reduce(Engine& e, Comm& comm, const plan::Job& job) {
  // NCCL wants a receive buffer on the root only.
  e.enqueued(comm,
             ncclReduce(job.in, job.out, job.count, to_nccl(job.dtype), to_nccl(job), job.root, comm.get(),
                        e.stream()),
             "ncclReduce");
}

void nccl_broadcast(Engine& e, Comm& comm, const plan::Job& job) {
  e.enqueued(comm, ncclBroadcast(job.out, job.out, job.count, to_nccl(job.dtype), job.root, comm.get(), e.stream()),
             "ncclBroadcast");
}

void nccl_replica_all_reduce(Engine& e, std::span<const ncclComm_t> comms, std::span<void* const> buffers,
                             const plan::Job& job) {
  ReplicaSet& set = e.replicas();
  const ncclRedOp_t op = to_nccl(job);
  ncclResult_t rc = ncclGroupStart();
  for (std::size_t r = 0; r < buffers.size() && rc == ncclSuccess; ++r)
    rc = ncclAllReduce(buffers[r], buffers[r], job.count, to_nccl(job.dtype), op, comms[r], set.stream(e, r));
  const ncclResult_t end = ncclGroupEnd();
  if (rc == ncclSuccess) rc = end;
  // Non-blocking communicators: each may still be enqueueing; settle all.
  for (ncclComm_t comm : comms) {
    e.enqueued(comm, rc, "ncclAllReduce (replicas, grouped)");
    if (rc == ncclSuccess) break;
  }
}

void nccl_reduce_scatter(Engine& e, Comm& comm, const plan::Job& job, int owners) {
  const std::size_t element = dtype_size(job.dtype);
  const auto* in = static_cast<const std::byte*>(job.in);
  auto* out = static_cast<std::byte*>(job.out);
  const ncclRedOp_t op = to_nccl(job);
  if (owners == comm.size() && job.count % std::size_t(owners) == 0) {
    const std::size_t each = job.count / std::size_t(owners);
    // Out of place into my slice of out: in place only when NCCL's layout
    // matches ours (recvbuff == sendbuff + rank * each), which it does here.
    e.enqueued(comm,
               ncclReduceScatter(in, out + std::size_t(comm.rank()) * each * element, each, to_nccl(job.dtype), op,
                                 comm.get(), e.stream()),
               "ncclReduceScatter");
    return;
  }
  per_slice(e, comm, job, owners, "ncclReduce (grouped reduce-scatter)", [&](int s, util::Slice slice) {
    return ncclReduce(in + slice.offset * element, out + slice.offset * element, slice.count, to_nccl(job.dtype), op,
                      s, comm.get(), e.stream());
  });
}

void nccl_all_gather(Engine& e, Comm& comm, const plan::Job& job, int owners) {
  const std::size_t element = dtype_size(job.dtype);
  auto* out = static_cast<std::byte*>(job.out);
  if (owners == comm.size() && job.count % std::size_t(owners) == 0) {
    const std::size_t each = job.count / std::size_t(owners);
    e.enqueued(comm,
               ncclAllGather(out + std::size_t(comm.rank()) * each * element, out, each, to_nccl(job.dtype),
                             comm.get(), e.stream()),
               "ncclAllGather");
    return;
  }
  per_slice(e, comm, job, owners, "ncclBroadcast (grouped all-gather)", [&](int s, util::Slice slice) {
    std::byte* at = out + slice.offset * element;
    return ncclBroadcast(at, at, slice.count, to_nccl(job.dtype), s, comm.get(), e.stream());
  });
}

void exchange_reduce_scatter(Engine& e, Comm& comm, const plan::Job& job, int owners) {
  const std::size_t element = dtype_size(job.dtype);
  const int rank = comm.rank(), size = comm.size();
  const util::Slice mine =
      rank < owners ? util::even_slice(job.count, std::size_t(owners), std::size_t(rank)) : util::Slice{};
  const std::size_t slice_bytes = mine.count * element;
  const auto* in = static_cast<const std::byte*>(job.in);
  auto* out = static_cast<std::byte*>(job.out);
  // Contribution r of my slice lands at [r * slice_bytes]; mine is copied
  // first, since out (== in when in place) receives the result.
  auto* contributions = static_cast<std::byte*>(e.device_scratch(3, slice_bytes * std::size_t(size)));
  if (mine.count > 0)
    STRATA_CHECK_CUDA(cudaMemcpyAsync(contributions + std::size_t(rank) * slice_bytes, in + mine.offset * element,
                                      slice_bytes, cudaMemcpyDeviceToDevice, e.stream()));
  per_slice(e, comm, job, owners, "ncclSend/ncclRecv (reduce-scatter for NaN-keeping min/max)",
            [&](int s, util::Slice slice) {
              if (s != rank)
                return ncclSend(in + slice.offset * element, slice.count * element, ncclUint8, s, comm.get(),
                                e.stream());
              ncclResult_t rc = ncclSuccess;
              for (int r = 0; r < size && rc == ncclSuccess; ++r)
                if (r != rank)
                  rc = ncclRecv(contributions + std::size_t(r) * slice_bytes, slice_bytes, ncclUint8, r, comm.get(),
                                e.stream());
              return rc;
            });
  if (mine.count == 0) return;
  reduce_in_rank_order(e, out + mine.offset * element, contributions, slice_bytes, size, mine.count, job.dtype,
                       job.op);
}

void gather_slices(Engine& e, Comm& comm, const plan::Job& job, int owners, int root) {
  const std::size_t element = dtype_size(job.dtype);
  auto* out = static_cast<std::byte*>(job.out);
  per_slice(e, comm, job, owners, "ncclSend/ncclRecv (gather to the root)", [&](int s, util::Slice slice) {
    if (s == root) return ncclSuccess;
    std::byte* at = out + slice.offset * element;
    if (comm.rank() == s) return ncclSend(at, slice.count * element, ncclUint8, root, comm.get(), e.stream());
    if (comm.rank() == root) return ncclRecv(at, slice.count * element, ncclUint8, s, comm.get(), e.stream());
    return ncclSuccess;
  });
}

}  // namespace strata::nccl
