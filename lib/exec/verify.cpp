#include "exec/verify.hpp"

#include <array>
#include <cstring>
#include <vector>

#include "host/shm_rounds.hpp"
#include "host/transport.hpp"
#include "util/check.hpp"
#include "util/trace.hpp"

namespace strata::exec {
namespace {

// The fingerprint as words: 64 bytes without padding, so equal words are
// equal fields (describe_disagreement names the fields afterwards).
constexpr std::size_t kFields = sizeof(plan::Fingerprint) / sizeof(std::uint64_t);
static_assert(kFields * sizeof(std::uint64_t) == sizeof(plan::Fingerprint));

std::array<std::uint64_t, kFields> fields_of(const plan::Fingerprint& f) {
  std::array<std::uint64_t, kFields> words;
  std::memcpy(words.data(), &f, sizeof f);
  return words;
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
  util::trace::Span span("verify");  // (a check riding in a shared-memory round has none)
  host::Transport t(context.comm, context.rank, context.size, deadline, info, *context.workspace);
  if (context.segment && context.split->node_count == 1)
    host::shm::verify(t, *context.segment, mine);
  else
    verify_over_mpi(t, *context.landing, mine);
}

}  // namespace strata::exec
