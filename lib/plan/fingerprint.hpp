// Fingerprint: what every rank must agree on for one call before any data
// moves (the collective, counts, dtype, op, root, memory, a batch's tensors
// and packing, the spec, the implementation hint and chunk size that pick
// and cut the algorithm, and the call's number). Ranks exchange it at the
// start of every call (lib/exec/verify.hpp); on any difference every rank
// raises strata::Mismatch naming the fields and which ranks hold which
// value, and nothing has been sent. A plain 64-byte value, so it travels in
// a shared-memory round header or one small MPI message.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "plan/job.hpp"
#include "plan/spec.hpp"
#include "strata/options.hpp"
#include "strata/types.hpp"

namespace strata::plan {

// What a call is, as far as matching goes (batches are their own kinds:
// their per-pack collectives are never checked one by one).
enum class Operation : std::int32_t {
  all_reduce,
  reduce,
  broadcast,
  batch_all_reduce,
  batch_reduce,
  batch_broadcast,
  reduce_scatter,
  all_gather,
};

// The Operation of one (unbatched) call of `collective`.
Operation operation_of(Collective collective);

// "all_reduce", ..., "batch_broadcast": what messages call the operation.
std::string_view operation_name(Operation operation);

// The batch kind of `collective` (all_reduce -> batch_all_reduce, ...).
Operation batch_operation(Collective collective);

struct Fingerprint {
  std::uint64_t sequence = 0;  // the communicator's call number
  std::uint64_t count = 0;     // elements; a batch: of all its tensors
  std::uint64_t layout = 0;    // a batch: hash of its tensors' counts and dtypes and of its packing; else 0
  std::uint64_t spec = 0;      // hash of the all_reduce_spec the call runs under
  Operation operation = Operation::all_reduce;
  std::int32_t dtype = 0;      // a batch: -1 (its layout covers the dtypes)
  std::int32_t op = 0;         // ReduceOp; broadcast: -1
  std::int32_t root = -1;      // reduce and broadcast; else -1
  std::int8_t memory = 0;           // Memory
  std::int8_t arguments = 0;        // 0: valid; 1: this rank's arguments failed validation (it raises
                                    // InvalidArgument; the fields above are as it passed them)
  std::int16_t implementation = 0;  // CommunicationOptions::implementation (it can change the algorithm)
  std::int32_t tensors = 1;         // a batch: its tensor count
  std::int32_t replicas = 1;        // tensors per rank per value (TF's num_gpus_per_worker)
  std::int32_t chunk_bytes = 0;     // Config::chunk_bytes as the call runs it (<= 1 GiB by validation)
  bool operator==(const Fingerprint&) const = default;
};
static_assert(sizeof(Fingerprint) == 64, "a fingerprint fills one cache line");

// A 64-bit digest of the whole fingerprint, cheap enough for every call (a
// few cycles): equal fingerprints have equal digests; different ones almost
// surely differ (every bit of every field is mixed in).
std::uint64_t digest(const Fingerprint& fingerprint);

// FNV-1a, for layouts and specs.
std::uint64_t hash_bytes(const void* data, std::size_t bytes, std::uint64_t seed = 1469598103934665603ull);

// A batch's layout: counts and dtypes of `shapes` (count, dtype pairs per
// tensor) plus the packing options and bytes_per_pack that decide its packs.
std::uint64_t batch_layout(std::span<const Tensor> tensors, const PackingOptions& packing,
                           long long bytes_per_pack);

// A spec's identity, so ranks running different specs are told apart.
std::uint64_t spec_hash(const Spec& spec);

// "" when every fingerprint of `all` (indexed by rank) is equal; else one
// clause per differing field, each naming the values and the ranks holding
// them: "count: 100 on ranks 0-2, 101 on rank 3; dtype: f32 on ranks 0-2,
// f64 on rank 3".
std::string describe_disagreement(std::span<const Fingerprint> all);

// Throws strata::Mismatch for call `info` on `rank` (of its communicator)
// with describe_disagreement(all) and what it means for the caller.
[[noreturn]] void throw_mismatch(const CallInfo& info, int rank, std::span<const Fingerprint> all);

}  // namespace strata::plan
