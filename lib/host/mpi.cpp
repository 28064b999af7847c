// mpi: the MPI library's own collectives (MPI_Allreduce, MPI_Reduce,
// MPI_Bcast): the baseline every benchmark compares against, and a fallback.
// Without a timeout the blocking calls run, exactly what an application
// would call; with one, the non-blocking MPI_I* variants are polled against
// the deadline, and their results land in strata's scratch first and are
// copied out on completion, so a collective abandoned at the deadline can
// never write into the caller's buffer afterwards.
// Where MPI's built-in operators would differ from strata's semantics,
// user-defined operators run strata's own kernel instead:
//   - f16/bf16: MPI has no such types (reduced in f32, rounded once);
//   - 8-bit integer sum/prod: Open MPI's vectorised MPI_SUM saturates i8/u8
//     (open-mpi/ompi#8045) where strata wraps (two's complement);
//   - f32/f64 min/max: MPI_MIN/MAX drop a NaN (fmin-like) where strata lets
//     it through, as every other algorithm does;
//   - unsigned min/max on MPICH 4.0.0-4.0.2 (Debian 12's): its MPI_MIN/MAX
//     compare unsigned integers as signed (pmodels/mpich#6083, fixed in
//     4.0.3), so min(59, 212) of MPI_UINT8_T is 212.
#include <climits>
#include <cstddef>
#include <cstring>
#include <mutex>

#include "host/algorithm.hpp"
#include "host/reduce_kernel.hpp"
#include "model/formula.hpp"
#include "strata/mpi_datatype.hpp"
#include "util/check.hpp"
#include "util/copy.hpp"

// MPICH 4.0.0-4.0.2 (Debian 12's), whose faults are worked around below.
#if defined(MPICH_NUMVERSION) && !defined(I_MPI_VERSION) && MPICH_NUMVERSION >= 40000000 && \
    MPICH_NUMVERSION < 40003000
#define STRATA_MPICH_4_0_2 1
#else
#define STRATA_MPICH_4_0_2 0
#endif

namespace strata::host {
namespace {

// User-defined operators running strata's own kernel: inout = in op inout.
template <DataType D, ReduceOp Op>
void strata_op(void* in, void* inout, int* len, MPI_Datatype*) {
  reduce_into(inout, in, inout, static_cast<std::size_t>(*len), D, Op);
}

template <DataType D>
MPI_Op strata_mpi_op(ReduceOp op) {
  // Created once per process on first use and kept until MPI_Finalize.
  // Under a lock: communicators' progress threads may ask at once
  // (MPI_THREAD_MULTIPLE, docs/REQUESTS.md).
  static std::mutex creating;
  static MPI_Op ops[4] = {MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL};
  static MPI_User_function* const fns[4] = {strata_op<D, ReduceOp::sum>, strata_op<D, ReduceOp::min>,
                                            strata_op<D, ReduceOp::max>, strata_op<D, ReduceOp::prod>};
  const int index = op == ReduceOp::min ? 1 : op == ReduceOp::max ? 2 : op == ReduceOp::prod ? 3 : 0;
  std::lock_guard lock(creating);
  if (ops[index] == MPI_OP_NULL) STRATA_CHECK_MPI(MPI_Op_create(fns[index], /*commute=*/1, &ops[index]));
  return ops[index];
}

MPI_Op mpi_op(DataType dtype, ReduceOp op) {
  const bool arithmetic = op == ReduceOp::sum || op == ReduceOp::prod;
  if (dtype == DataType::f16) return strata_mpi_op<DataType::f16>(op);
  if (dtype == DataType::bf16) return strata_mpi_op<DataType::bf16>(op);
  if (dtype == DataType::i8 && arithmetic) return strata_mpi_op<DataType::i8>(op);
  if (dtype == DataType::u8 && arithmetic) return strata_mpi_op<DataType::u8>(op);
  if (dtype == DataType::f32 && !arithmetic) return strata_mpi_op<DataType::f32>(op);
  if (dtype == DataType::f64 && !arithmetic) return strata_mpi_op<DataType::f64>(op);
#if STRATA_MPICH_4_0_2
  if (dtype == DataType::u8 && !arithmetic) return strata_mpi_op<DataType::u8>(op);
  if (dtype == DataType::u32 && !arithmetic) return strata_mpi_op<DataType::u32>(op);
  if (dtype == DataType::u64 && !arithmetic) return strata_mpi_op<DataType::u64>(op);
#endif
  switch (op) {
    case ReduceOp::min: return MPI_MIN;
    case ReduceOp::max: return MPI_MAX;
    case ReduceOp::prod: return MPI_PROD;
    default: return MPI_SUM;
  }
}

// MPI counts are int: run messages larger than this in pieces.
constexpr std::size_t kMaxCount = std::size_t{1} << 30;

template <typename Run>
void in_pieces(const Job& job, Run run) {
  const std::size_t element = job.element_bytes();
  for (std::size_t done = 0; done < job.count; done += kMaxCount) {
    const int n = static_cast<int>(std::min(kMaxCount, job.count - done));
    run(static_cast<const std::byte*>(job.in) + done * element,
        job.out ? static_cast<std::byte*>(job.out) + done * element : nullptr, n);
  }
}

// With a deadline, MPI's non-blocking collective receives into scratch
// (slot 0) and the result is copied to `out` once it completed: abandoned at
// the deadline, it can only write into strata's memory.
template <typename Start>
void bounded(Transport& t, void* out, int n, DataType dtype, Start start) {
  const std::size_t bytes = static_cast<std::size_t>(n) * dtype_size(dtype);
  std::byte* landing = t.scratch(0, bytes);
  MPI_Request request;
  STRATA_CHECK_MPI(start(landing, &request));
  t.wait_collective(request);
  util::copy_bytes(out, landing, bytes);
}

void mpi_all_reduce(Transport& t, const Job& job) {
  const MPI_Datatype type = mpi_datatype(job.dtype);
  const MPI_Op op = mpi_op(job.dtype, job.op);
  in_pieces(job, [&](const void* in, void* out, int n) {
    if (!t.bounded()) {
      STRATA_CHECK_MPI(MPI_Allreduce(in == out ? MPI_IN_PLACE : in, out, n, type, op, t.comm()));
      return;
    }
    bounded(t, out, n, job.dtype, [&](void* landing, MPI_Request* request) {
      return MPI_Iallreduce(in, landing, n, type, op, t.comm(), request);
    });
  });
}

void mpi_reduce(Transport& t, const Job& job) {
  const MPI_Datatype type = mpi_datatype(job.dtype);
  const MPI_Op op = mpi_op(job.dtype, job.op);
  const bool root = t.rank() == job.root;
  in_pieces(job, [&](const void* in, void* out, int n) {
    if (!t.bounded()) {
      const bool in_place = root && in == out;
      if (STRATA_MPICH_4_0_2 && in_place && job.root != 0) {
        // MPICH 4.0.2's MPI_Reduce with MPI_IN_PLACE at a root other than 0
        // reads past its buffers and crashes from about 1000 elements: the
        // input goes from a copy in scratch instead.
        const std::size_t bytes = static_cast<std::size_t>(n) * dtype_size(job.dtype);
        std::byte* copy = t.scratch(0, bytes);
        util::copy_bytes(copy, in, bytes);
        STRATA_CHECK_MPI(MPI_Reduce(copy, out, n, type, op, job.root, t.comm()));
        return;
      }
      STRATA_CHECK_MPI(MPI_Reduce(in_place ? MPI_IN_PLACE : in, out, n, type, op, job.root, t.comm()));
      return;
    }
    if (!root) {  // nothing lands here
      MPI_Request request;
      STRATA_CHECK_MPI(MPI_Ireduce(in, nullptr, n, type, op, job.root, t.comm(), &request));
      t.wait_collective(request);
      return;
    }
    bounded(t, out, n, job.dtype, [&](void* landing, MPI_Request* request) {
      return MPI_Ireduce(in, landing, n, type, op, job.root, t.comm(), request);
    });
  });
}

void mpi_broadcast(Transport& t, const Job& job) {
  in_pieces(job, [&](const void*, void* buffer, int n) {
    if (!t.bounded()) {
      STRATA_CHECK_MPI(MPI_Bcast(buffer, n, mpi_datatype(job.dtype), job.root, t.comm()));
      return;
    }
    if (t.rank() == job.root) {  // only sends
      MPI_Request request;
      STRATA_CHECK_MPI(MPI_Ibcast(buffer, n, mpi_datatype(job.dtype), job.root, t.comm(), &request));
      t.wait_collective(request);
      return;
    }
    bounded(t, buffer, n, job.dtype, [&](void* landing, MPI_Request* request) {
      return MPI_Ibcast(landing, n, mpi_datatype(job.dtype), job.root, t.comm(), request);
    });
  });
}

// The cost model's formula (model/formula.hpp): whatever the MPI library picks,
// guessed as the better of recursive doubling (log2 p exchanges of the whole
// message) and a ring without chunking, the two Open MPI's tuned module uses
// for small and large sizes, times the factor the calibration measured between
// MPI_Allreduce and that guess on a pair of ranks (Machine::mpi_scale): how
// much slower the library's own implementation runs than the algorithm it is
// guessed to be.
model::Cost mpi_cost(const model::Group& g, double m, int /*shards*/) {
  if (g.n <= 1) return {};
  const int p = model::floor_pow2(g.n);
  const model::Link fold = model::step_link(g, p, 1);
  double doubling = p != g.n ? 2 * (fold.alpha + m * fold.beta) + m * g.machine->gamma : 0;
  for (int distance = 1; distance < p; distance *= 2) {
    const model::Link link = model::step_link(g, distance, g.ranks_per_node);
    doubling += link.alpha + m * link.beta + m * g.machine->gamma;
  }
  const model::Cost ring = model::ring_steps(g, m, 1);
  const model::Cost guess = ring.time < doubling ? ring : model::everyone_busy(doubling);
  return {g.machine->mpi_scale * guess.time, g.machine->mpi_scale * guess.busy};
}

}  // namespace

extern const Algorithm mpi = {
    .info = {.name = "mpi",
             .description = "the MPI library's own MPI_Allreduce, MPI_Reduce and MPI_Bcast",
             .carried_by_check = true, .model = {.cost = mpi_cost, .guessed = true}},
    .all_reduce = mpi_all_reduce, .reduce = mpi_reduce, .broadcast = mpi_broadcast};

}  // namespace strata::host
