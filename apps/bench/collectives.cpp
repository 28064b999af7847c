// The collective descriptors. Each is a handful of lines; everything
// shared lives in the driver.
#include "collectives.hpp"

namespace bench {
namespace {

using strata::DataType;
using strata::ReduceOp;
using strata::Request;

// MPI has no mean: the baseline times the sum, which is the communication a
// mean needs (strata divides locally afterwards).
MPI_Op mpi_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum:
    case ReduceOp::mean: return MPI_SUM;
    case ReduceOp::min: return MPI_MIN;
    case ReduceOp::max: return MPI_MAX;
    case ReduceOp::prod: return MPI_PROD;
  }
  return MPI_OP_NULL;
}

int mpi_count(const strata::Tensor& t) { return static_cast<int>(t.count); }

// busbw factors, as nccl-tests defines them (doc/PERFORMANCE.md there): the
// fraction of the data each rank's busiest link must carry with an optimal
// algorithm, so that busbw is comparable to the hardware's link bandwidth.
double all_reduce_factor(int n) { return n > 1 ? 2.0 * (n - 1) / n : 1.0; }
double one_factor(int) { return 1.0; }
double blockwise_factor(int n) { return n > 1 ? double(n - 1) / n : 1.0; }

// --- all_reduce: every rank gets op(in) --------------------------------------
void all_reduce_run(Context& c, Buffers& b) { c.comm.all_reduce(b.in()[0], b.out()[0], c.op, c.call); }
Request all_reduce_start(Context& c, Buffers& b) { return c.comm.iall_reduce(b.in()[0], b.out()[0], c.op, c.call); }
Request all_reduce_bind(Context& c, Buffers& b) { return c.comm.all_reduce_init(b.in()[0], b.out()[0], c.op, c.call); }
void all_reduce_baseline(Context& c, Buffers& b) {
  const auto& in = b.in()[0];
  MPI_Allreduce(b.in_place() ? MPI_IN_PLACE : in.data, b.out()[0].data, mpi_count(in), strata::mpi_datatype(in.dtype), mpi_op(c.op),
                c.mpi_comm);
}

// --- reduce: only the root gets op(in) ---------------------------------------
void reduce_run(Context& c, Buffers& b) { c.comm.reduce(b.in()[0], b.out()[0], c.op, c.root, c.call); }
Request reduce_start(Context& c, Buffers& b) { return c.comm.ireduce(b.in()[0], b.out()[0], c.op, c.root, c.call); }
Request reduce_bind(Context& c, Buffers& b) { return c.comm.reduce_init(b.in()[0], b.out()[0], c.op, c.root, c.call); }
void reduce_baseline(Context& c, Buffers& b) {
  const auto& in = b.in()[0];
  int rank = 0;
  MPI_Comm_rank(c.mpi_comm, &rank);
  // MPI_IN_PLACE is only legal on the root; other ranks pass their buffer.
  const void* send = b.in_place() && rank == c.root ? MPI_IN_PLACE : in.data;
  MPI_Reduce(send, b.out()[0].data, mpi_count(in), strata::mpi_datatype(in.dtype), mpi_op(c.op), c.root, c.mpi_comm);
}

// --- broadcast: every rank gets the root's buffer -----------------------------
void broadcast_run(Context& c, Buffers& b) { c.comm.broadcast(b.in()[0], c.root, c.call); }
Request broadcast_start(Context& c, Buffers& b) { return c.comm.ibroadcast(b.in()[0], c.root, c.call); }
Request broadcast_bind(Context& c, Buffers& b) { return c.comm.broadcast_init(b.in()[0], c.root, c.call); }
void broadcast_baseline(Context& c, Buffers& b) {
  const auto& t = b.in()[0];
  MPI_Bcast(t.data, mpi_count(t), strata::mpi_datatype(t.dtype), c.root, c.mpi_comm);
}

// --- batch: one batch_all_reduce of a model's gradients, in place -------------
void batch_run(Context& c, Buffers& b) { c.comm.batch_all_reduce(b.in(), c.op, c.packing, c.call); }
Request batch_start(Context& c, Buffers& b) { return c.comm.ibatch_all_reduce(b.in(), c.op, c.packing, c.call); }
// (no persistent batch in strata: --form persistent refuses batch)
void batch_baseline(Context& c, Buffers& b) {
  // What a framework without a batching library does: one call per tensor.
  for (const auto& t : b.in())
    MPI_Allreduce(MPI_IN_PLACE, t.data, mpi_count(t), strata::mpi_datatype(t.dtype), mpi_op(c.op), c.mpi_comm);
}

// --- reduce_scatter: rank r gets op over every rank's block r ---------------
void reduce_scatter_run(Context& c, Buffers& b) { c.comm.reduce_scatter(b.in()[0], b.out()[0], c.op, c.call); }
Request reduce_scatter_start(Context& c, Buffers& b) {
  return c.comm.ireduce_scatter(b.in()[0], b.out()[0], c.op, c.call);
}
Request reduce_scatter_bind(Context& c, Buffers& b) {
  return c.comm.reduce_scatter_init(b.in()[0], b.out()[0], c.op, c.call);
}
void reduce_scatter_baseline(Context& c, Buffers& b) {
  // MPI's in place reads the whole input from recvbuf and writes its start.
  const auto& in = b.in()[0];
  const auto& out = b.out()[0];
  if (b.in_place())
    MPI_Reduce_scatter_block(MPI_IN_PLACE, in.data, mpi_count(out), strata::mpi_datatype(in.dtype), mpi_op(c.op),
                             c.mpi_comm);
  else
    MPI_Reduce_scatter_block(in.data, out.data, mpi_count(out), strata::mpi_datatype(in.dtype), mpi_op(c.op),
                             c.mpi_comm);
}

// --- all_gather: every rank gets every rank's block ---------------------------
void all_gather_run(Context& c, Buffers& b) { c.comm.all_gather(b.in()[0], b.out()[0], c.call); }
Request all_gather_start(Context& c, Buffers& b) { return c.comm.iall_gather(b.in()[0], b.out()[0], c.call); }
Request all_gather_bind(Context& c, Buffers& b) { return c.comm.all_gather_init(b.in()[0], b.out()[0], c.call); }
void all_gather_baseline(Context& c, Buffers& b) {
  const auto& in = b.in()[0];
  const MPI_Datatype type = strata::mpi_datatype(in.dtype);
  MPI_Allgather(b.in_place() ? MPI_IN_PLACE : in.data, mpi_count(in), type, b.out()[0].data, mpi_count(in), type,
                c.mpi_comm);
}

const Collective kAllReduce{"all_reduce", strata::Collective::all_reduce, "MPI_Allreduce", "ncclAllReduce", "2(n-1)/n",
                            all_reduce_factor, false, true, false, false, all_reduce_run, all_reduce_baseline,
                            all_reduce_start, all_reduce_bind};
const Collective kReduce{"reduce", strata::Collective::reduce, "MPI_Reduce", "ncclReduce", "1", one_factor, true, true,
                         true, false, reduce_run, reduce_baseline, reduce_start, reduce_bind};
const Collective kBroadcast{"broadcast", strata::Collective::broadcast, "MPI_Bcast", "ncclBroadcast", "1", one_factor,
                            true, false, false, true, broadcast_run, broadcast_baseline, broadcast_start,
                            broadcast_bind};
const Collective kBatch{"batch", strata::Collective::all_reduce, "MPI_Allreduce per tensor", "ncclAllReduce per tensor", "2(n-1)/n",
                        all_reduce_factor, false, true, false, true, batch_run, batch_baseline, batch_start, nullptr};
const Collective kReduceScatter{"reduce_scatter", strata::Collective::reduce_scatter, "MPI_Reduce_scatter_block",
                                "ncclReduceScatter", "(n-1)/n", blockwise_factor, false, true, false, false,
                                reduce_scatter_run, reduce_scatter_baseline, reduce_scatter_start, reduce_scatter_bind,
                                Blocks::input};
const Collective kAllGather{"all_gather", strata::Collective::all_gather, "MPI_Allgather", "ncclAllGather", "(n-1)/n",
                            blockwise_factor, false, false, false, false, all_gather_run, all_gather_baseline,
                            all_gather_start, all_gather_bind, Blocks::output};

}  // namespace

const Collective& collective_for(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::all_reduce: return kAllReduce;
    case CollectiveKind::reduce: return kReduce;
    case CollectiveKind::broadcast: return kBroadcast;
    case CollectiveKind::batch: return kBatch;
    case CollectiveKind::reduce_scatter: return kReduceScatter;
    case CollectiveKind::all_gather: return kAllGather;
  }
  return kAllReduce;
}

}  // namespace bench
