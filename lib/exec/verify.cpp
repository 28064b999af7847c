#include "exec/verify.hpp"

#include <cstring>
#include <optional>

#include "exec/check_record.hpp"
#include "util/flight_recorder.hpp"
#include "host/shm_rounds.hpp"
#include "host/transport.hpp"
#include "util/check.hpp"
#include "util/trace.hpp"

namespace strata::exec {
namespace {

// What this rank puts in the record for `carry` (null: nothing), and where
// the result goes once every rank agrees (null: nowhere on this rank).
struct Carrying {
  Carried carried;
  void* result = nullptr;
};

std::optional<Carrying> carrying(const CarriedCall* carry, int rank, int size) {
  if (!carry) return std::nullopt;
  const plan::Job& job = *carry->job;
  if (carry->collective == Collective::all_gather) {  // job.count is one block; job.out holds `size`
    if (job.bytes() * static_cast<std::size_t>(size) > kCarriedBytes) return std::nullopt;
    Carrying c;
    c.carried = {job.in, job.count * static_cast<std::size_t>(size), job.dtype, kGatheredOp, job.bytes(), rank};
    c.result = job.out;
    return c;
  }
  if (job.bytes() > kCarriedBytes) return std::nullopt;  // runs its plan after the check
  const bool root = rank == job.root;
  Carrying c;
  c.carried = {job.in, job.count, job.dtype, static_cast<std::int32_t>(job.op)};
  switch (carry->collective) {
    case Collective::all_reduce: c.result = job.out; break;
    case Collective::reduce: c.result = root ? job.out : nullptr; break;
    case Collective::broadcast:
      c.carried.data = root ? job.in : nullptr;
      c.carried.op = kCopiedOp;
      c.result = root ? nullptr : job.out;
      break;
    case Collective::reduce_scatter:
    case Collective::all_gather: return std::nullopt;  // (all_gather: above)
  }
  return c;
}

// The buffers of both collectives come from `arena` (the communicator's,
// abandoned when a call fails), never from the stack: a collective given up
// at the deadline may still complete later and write into them. Returns
// whether `carry` was done.
bool verify_over_mpi(host::Transport& t, util::Arena& arena, const plan::Fingerprint& mine,
                     const CarriedCall* carry) {
  const std::optional<Carrying> carried = carrying(carry, t.rank(), t.size());
  auto* record = new (arena.allocate(sizeof(CheckRecord))) CheckRecord;
  fill_record(*record, mine, carried ? &carried->carried : nullptr);
  if (t.bounded()) {
    MPI_Request request = MPI_REQUEST_NULL;
    STRATA_CHECK_MPI(
        MPI_Iallreduce(MPI_IN_PLACE, record, 1, check_record_type(), check_record_op(), t.comm(), &request));
    t.wait_collective(request);
  } else {
    // Without a deadline nothing needs polling, and MPI's blocking
    // all-reduce costs a fraction of its non-blocking one polled (Open MPI
    // 4.1, 2 ranks: 0.5 against 2.4 us; docs/PERFORMANCE.md, "The call
    // check across nodes").
    STRATA_CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, record, 1, check_record_type(), check_record_op(), t.comm()));
  }
  if (every_rank_agrees(*record)) {
    if (carried && carried->result)
      std::memcpy(carried->result, record->data, carried->carried.count * dtype_size(carried->carried.dtype));
    return carried.has_value();
  }
  // Rare: everyone learns everyone's fingerprint to say who differs.
  const std::size_t size = static_cast<std::size_t>(t.size());
  auto* all = reinterpret_cast<plan::Fingerprint*>(arena.allocate(size * sizeof(plan::Fingerprint)));
  MPI_Request request = MPI_REQUEST_NULL;
  STRATA_CHECK_MPI(MPI_Iallgather(&mine, sizeof mine, MPI_BYTE, all, sizeof mine, MPI_BYTE, t.comm(), &request));
  t.wait_collective(request);
  plan::throw_mismatch(t.info(), t.rank(), std::span(all, size));
}

}  // namespace

bool verify_call(const HostContext& context, const plan::Fingerprint& mine, const util::Deadline& deadline,
                 const plan::CallInfo& info, const CarriedCall* carry) {
  if (context.size == 1) return false;
  util::trace::Span span("verify");  // (a check riding in a shared-memory round has none)
  host::Transport t(context.comm, context.rank, context.size, deadline, info, *context.workspace);
  if (checks_over_mpi(context)) {
    const bool carried = verify_over_mpi(t, *context.landing, mine, carry);
    util::flight::mark_checked();
    return carried;
  }
  host::shm::verify(t, *context.segment, mine);
  util::flight::mark_checked();
  return false;
}

bool checks_over_mpi(const HostContext& context) {
  return context.size > 1 && !(context.segment && context.split->node_count == 1);
}

}  // namespace strata::exec
