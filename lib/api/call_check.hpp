// The call check's inputs: whether a communicator checks calls (agreed by
// every rank when it is made) and what a call looks like to the check, its
// fingerprint (the fields every rank must pass alike). The comparison
// itself runs in exec (exec/verify.hpp, or inside the first shared-memory
// round); the Session numbers calls and refuses invalid ones. Internal
// header.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>

#include "exec/call.hpp"
#include "exec/plan_cache.hpp"
#include "plan/fingerprint.hpp"
#include "plan/numerics.hpp"
#include "strata/options.hpp"

namespace strata::api {

// Whether this rank wants calls checked: Config::check_calls, unless
// STRATA_CHECK=off (or 0, false, no) turns it off for measurements.
bool call_check_wanted(const Config& config);

// Whether this rank wants the integrity check after each host call:
// STRATA_VERIFY=checksum or off when set (it overrides the field), else
// Config::verify. Throws InvalidArgument naming STRATA_VERIFY for any other
// value (a typo must not silently mean "off").
bool verification_wanted(const Config& config);

// What the ranks agree on when a communicator is made.
struct Agreed {
  bool every_rank_traces = false;  // STRATA_TRACE on every rank: trace clocks may be aligned (collective)
  bool every_rank_models = false;  // every rank asked for auto from the cost model (api/model_auto.hpp)
};

// Collective over `comm` (`size` ranks). Ranks must agree on whether calls
// are checked: a checking rank exchanges a fingerprint (or carries one in
// the shared-memory round) that an unchecking rank never sends, which would
// misread data or hang. Throws InvalidArgument on every rank when `wanted`
// differs between ranks (STRATA_CHECK set on some ranks only, or
// Config::check_calls differing). The same one exchange settles auto from
// the cost model: `model_wanted` (model_auto_wanted) must be alike too, or
// only some ranks would read the model, and InvalidArgument says so; and
// the integrity check: `verify_wanted` (verification_wanted) alike, or a
// verifying rank would wait in an all-reduce the others never make; and
// `numerics` (numerics_wanted): ranks reducing in different ways would
// exchange different messages.
Agreed agree_on_call_check(MPI_Comm comm, int size, bool wanted, bool model_wanted, bool verify_wanted,
                           const plan::Numerics& numerics);

// Fingerprints of one communicator's calls.
class Fingerprints {
 public:
  Fingerprints() = default;
  // `plans` (the communicator's, outliving this) gives the spec hashes;
  // `chunk_bytes` is the host ring's pipeline chunk (ranks cutting a ring
  // differently would mismatch messages).
  Fingerprints(const exec::PlanCache* plans, std::size_t chunk_bytes) : plans_(plans), chunk_bytes_(chunk_bytes) {}

  // The fingerprint of `call`, numbered `sequence`.
  plan::Fingerprint of(const exec::Call& call, std::uint64_t sequence) const;
  // The fingerprint of a batch, numbered `sequence` (its packs run under
  // that number). A refused batch may hold a tensor without replicas.
  plan::Fingerprint of(const exec::BatchCall& call, std::uint64_t sequence) const;

 private:
  // The fields single calls and batches fill alike.
  plan::Fingerprint common(Collective collective, ReduceOp op, int root, Memory memory,
                           const CommunicationOptions& options, const plan::Spec* spec, std::uint64_t sequence) const;

  const exec::PlanCache* plans_ = nullptr;
  std::size_t chunk_bytes_ = 0;
};

}  // namespace strata::api
