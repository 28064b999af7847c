#include "exec/check_record.hpp"

#include <algorithm>
#include <cstring>
#include <mutex>

#include "host/reduce_kernel.hpp"
#include "util/check.hpp"

namespace strata::exec {
namespace {

constexpr std::uint64_t kSpoiled = ~std::uint64_t{0};

// inout = in (op) inout, record by record. Records that disagree on what
// they carry are not combined (and the result says so); their ranks'
// fingerprints differ too, so every rank raises Mismatch and the data is
// never read.
void combine(void* in_records, void* inout_records, int* len, MPI_Datatype*) {
  const auto* in = static_cast<const CheckRecord*>(in_records);
  auto* inout = static_cast<CheckRecord*>(inout_records);
  for (int r = 0; r < *len; ++r) {
    const CheckRecord& a = in[r];
    CheckRecord& b = inout[r];
    b.digest_max = std::max(a.digest_max, b.digest_max);
    b.complement_max = std::max(a.complement_max, b.complement_max);
    if (a.count != b.count || a.dtype != b.dtype || a.op != b.op) {
      b.count = kSpoiled;
      continue;
    }
    if (b.count == 0 || b.count == kSpoiled) continue;
    const auto dtype = static_cast<DataType>(b.dtype);
    if (b.op == kCopiedOp) {
      if (a.sources) std::memcpy(b.data, a.data, b.count * dtype_size(dtype));
    } else if (b.op == kGatheredOp) {
      for (std::size_t i = 0; i < b.count * dtype_size(dtype); ++i) b.data[i] |= a.data[i];
    } else if (a.sources && b.sources) {
      host::reduce_into(b.data, a.data, b.data, b.count, dtype, static_cast<ReduceOp>(b.op));
    } else if (a.sources) {
      std::memcpy(b.data, a.data, b.count * dtype_size(dtype));
    }
    b.sources += a.sources;
  }
}

std::mutex making;  // communicators' progress threads may check at once (MPI_THREAD_MULTIPLE)

}  // namespace

void fill_record(CheckRecord& record, const plan::Fingerprint& mine, const Carried* carried) {
  const std::uint64_t digest = plan::digest(mine);
  record.digest_max = digest;
  record.complement_max = ~digest;
  record.count = carried ? carried->count : 0;
  record.dtype = carried ? static_cast<std::int32_t>(carried->dtype) : 0;
  record.op = carried ? carried->op : 0;
  record.sources = carried && carried->data ? 1 : 0;
  if (!record.sources) return;
  if (carried->op == kGatheredOp) {
    std::memset(record.data, 0, carried->count * dtype_size(carried->dtype));
    std::memcpy(record.data + carried->block_bytes * static_cast<std::size_t>(carried->rank), carried->data,
                carried->block_bytes);
    return;
  }
  std::memcpy(record.data, carried->data, carried->count * dtype_size(carried->dtype));
}

bool every_rank_agrees(const CheckRecord& record) { return record.digest_max == ~record.complement_max; }

MPI_Datatype check_record_type() {
  static MPI_Datatype type = MPI_DATATYPE_NULL;
  std::lock_guard lock(making);
  if (type == MPI_DATATYPE_NULL) {
    STRATA_CHECK_MPI(MPI_Type_contiguous(int(sizeof(CheckRecord)), MPI_BYTE, &type));
    STRATA_CHECK_MPI(MPI_Type_commit(&type));
  }
  return type;
}

MPI_Op check_record_op() {
  static MPI_Op op = MPI_OP_NULL;
  std::lock_guard lock(making);
  if (op == MPI_OP_NULL) STRATA_CHECK_MPI(MPI_Op_create(combine, /*commute=*/1, &op));
  return op;
}

}  // namespace strata::exec
