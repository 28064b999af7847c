#include "exec/verify.hpp"

#include <array>
#include <vector>

#include "host/shm_rounds.hpp"
#include "host/transport.hpp"
#include "util/check.hpp"

namespace strata::exec {
namespace {

constexpr std::size_t kFields = 14;

std::array<std::uint64_t, kFields> fields_of(const plan::Fingerprint& f) {
  return {f.sequence,
          f.count,
          f.layout,
          f.spec,
          static_cast<std::uint64_t>(f.operation),
          static_cast<std::uint64_t>(static_cast<std::int64_t>(f.dtype)),
          static_cast<std::uint64_t>(static_cast<std::int64_t>(f.op)),
          static_cast<std::uint64_t>(static_cast<std::int64_t>(f.root)),
          static_cast<std::uint64_t>(f.memory),
          static_cast<std::uint64_t>(f.arguments),
          static_cast<std::uint64_t>(f.implementation),
          static_cast<std::uint64_t>(f.chunk_bytes),
          static_cast<std::uint64_t>(f.tensors),
          static_cast<std::uint64_t>(f.replicas)};
}

// The buffers of both collectives come from `arena` (the communicator's,
// abandoned when a call fails), never from the stack: a collective given up
// at the deadline may still complete later and write into them.
void verify_over_mpi(host::Transport& t, util::Arena& arena, const plan::Fingerprint& mine) {
  // One MPI_MAX over (fields, ~fields) gives every field's maximum and
  // minimum: the ranks agree exactly when they are equal.
  const std::array<std::uint64_t, kFields> values = fields_of(mine);
  auto* extremes = reinterpret_cast<std::uint64_t*>(arena.allocate(2 * kFields * sizeof(std::uint64_t)));
  for (std::size_t i = 0; i < kFields; ++i) extremes[i] = values[i], extremes[kFields + i] = ~values[i];
  MPI_Request request = MPI_REQUEST_NULL;
  STRATA_CHECK_MPI(
      MPI_Iallreduce(MPI_IN_PLACE, extremes, int(2 * kFields), MPI_UINT64_T, MPI_MAX, t.comm(), &request));
  t.wait_collective(request);
  bool same = true;
  for (std::size_t i = 0; i < kFields; ++i) same &= extremes[i] == ~extremes[kFields + i];
  if (same) return;
  // Rare: everyone learns everyone's fingerprint to say who differs.
  const std::size_t size = static_cast<std::size_t>(t.size());
  auto* all = reinterpret_cast<plan::Fingerprint*>(arena.allocate(size * sizeof(plan::Fingerprint)));
  STRATA_CHECK_MPI(MPI_Iallgather(&mine, sizeof mine, MPI_BYTE, all, sizeof mine, MPI_BYTE, t.comm(), &request));
  t.wait_collective(request);
  plan::throw_mismatch(t.info(), t.rank(), std::span(all, size));
}

}  // namespace

void verify_call(const HostContext& context, const plan::Fingerprint& mine, const util::Deadline& deadline,
                 const plan::CallInfo& info) {
  if (context.size == 1) return;
  host::Transport t(context.comm, context.rank, context.size, deadline, info, *context.workspace);
  if (context.segment && context.split->node_count == 1)
    host::shm::verify(t, *context.segment, mine);
  else
    verify_over_mpi(t, *context.landing, mine);
}

}  // namespace strata::exec
