// mpi: the MPI library's own collectives (MPI_Allreduce, MPI_Reduce,
// MPI_Bcast): the baseline every benchmark compares against, and a fallback.
// Without a timeout the blocking calls run, exactly what an application
// would call; with one, the non-blocking MPI_I* variants are polled against
// the deadline (MPI cannot say which peers are missing).
// MPI has no f16/bf16: those use user-defined operators that reduce in f32.
// 8-bit integer sums and products use them too: Open MPI's vectorised
// MPI_SUM saturates i8/u8 (open-mpi/ompi#8045) where strata promises
// two's-complement wrap-around like every other algorithm.
#include <climits>
#include <cstddef>

#include "util/check.hpp"
#include "host/algorithm.hpp"
#include "host/reduce_kernel.hpp"

namespace strata::host {
namespace {

MPI_Datatype mpi_type(DataType dtype) {
  switch (dtype) {
    case DataType::f32: return MPI_FLOAT;
    case DataType::f64: return MPI_DOUBLE;
    case DataType::f16:
    case DataType::bf16: return MPI_UINT16_T;
    case DataType::i8: return MPI_INT8_T;
    case DataType::u8: return MPI_UINT8_T;
    case DataType::i32: return MPI_INT32_T;
    case DataType::u32: return MPI_UINT32_T;
    case DataType::i64: return MPI_INT64_T;
    case DataType::u64: return MPI_UINT64_T;
  }
  return MPI_DATATYPE_NULL;
}

// User-defined operators running strata's own kernel: inout = in op inout.
template <DataType D, ReduceOp Op>
void strata_op(void* in, void* inout, int* len, MPI_Datatype*) {
  reduce_into(inout, in, inout, static_cast<std::size_t>(*len), D, Op);
}

template <DataType D>
MPI_Op strata_mpi_op(ReduceOp op) {
  // Created once per process on first use and kept until MPI_Finalize.
  static MPI_Op ops[4] = {MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL};
  static MPI_User_function* const fns[4] = {strata_op<D, ReduceOp::sum>, strata_op<D, ReduceOp::min>,
                                            strata_op<D, ReduceOp::max>, strata_op<D, ReduceOp::prod>};
  const int index = op == ReduceOp::min ? 1 : op == ReduceOp::max ? 2 : op == ReduceOp::prod ? 3 : 0;
  if (ops[index] == MPI_OP_NULL) STRATA_CHECK_MPI(MPI_Op_create(fns[index], /*commute=*/1, &ops[index]));
  return ops[index];
}

MPI_Op mpi_op(DataType dtype, ReduceOp op) {
  const bool arithmetic = op == ReduceOp::sum || op == ReduceOp::prod;
  if (dtype == DataType::f16) return strata_mpi_op<DataType::f16>(op);
  if (dtype == DataType::bf16) return strata_mpi_op<DataType::bf16>(op);
  if (dtype == DataType::i8 && arithmetic) return strata_mpi_op<DataType::i8>(op);
  if (dtype == DataType::u8 && arithmetic) return strata_mpi_op<DataType::u8>(op);
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

void mpi_all_reduce(Transport& t, const Job& job) {
  const MPI_Datatype type = mpi_type(job.dtype);
  const MPI_Op op = mpi_op(job.dtype, job.op);
  in_pieces(job, [&](const void* in, void* out, int n) {
    const void* send = in == out ? MPI_IN_PLACE : in;
    if (!t.bounded()) {
      STRATA_CHECK_MPI(MPI_Allreduce(send, out, n, type, op, t.comm()));
      return;
    }
    MPI_Request request;
    STRATA_CHECK_MPI(MPI_Iallreduce(send, out, n, type, op, t.comm(), &request));
    t.wait_collective(request);
  });
}

void mpi_reduce(Transport& t, const Job& job) {
  const MPI_Datatype type = mpi_type(job.dtype);
  const MPI_Op op = mpi_op(job.dtype, job.op);
  const bool root = t.rank() == job.root;
  in_pieces(job, [&](const void* in, void* out, int n) {
    const void* send = root && in == out ? MPI_IN_PLACE : in;
    if (!t.bounded()) {
      STRATA_CHECK_MPI(MPI_Reduce(send, out, n, type, op, job.root, t.comm()));
      return;
    }
    MPI_Request request;
    STRATA_CHECK_MPI(MPI_Ireduce(send, out, n, type, op, job.root, t.comm(), &request));
    t.wait_collective(request);
  });
}

void mpi_broadcast(Transport& t, const Job& job) {
  in_pieces(job, [&](const void*, void* buffer, int n) {
    if (!t.bounded()) {
      STRATA_CHECK_MPI(MPI_Bcast(buffer, n, mpi_type(job.dtype), job.root, t.comm()));
      return;
    }
    MPI_Request request;
    STRATA_CHECK_MPI(MPI_Ibcast(buffer, n, mpi_type(job.dtype), job.root, t.comm(), &request));
    t.wait_collective(request);
  });
}

}  // namespace

extern const Algorithm mpi = {
    {.name = "mpi", .memory = Memory::host, .reduce = true, .broadcast = true, .shared_memory = false},
    mpi_all_reduce, mpi_reduce, mpi_broadcast,
};

}  // namespace strata::host
