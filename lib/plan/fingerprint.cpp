#include "plan/fingerprint.hpp"

#include <fmt/format.h>

#include <cstring>
#include <functional>
#include <map>
#include <vector>

#include "strata/errors.hpp"
#include "util/ranges.hpp"
#include "util/where.hpp"

namespace strata::plan {
namespace {

std::string_view operation_name(std::int64_t value) {
  static constexpr std::string_view kNames[] = {"all_reduce",      "reduce",         "broadcast",
                                                "batch_all_reduce", "batch_reduce",   "batch_broadcast",
                                                "reduce_scatter",   "all_gather"};
  return value >= 0 && value < std::int64_t(std::size(kNames)) ? kNames[value] : "?";
}

struct Field {
  const char* name;
  std::function<std::int64_t(const Fingerprint&)> value;
  std::function<std::string(std::int64_t)> show;
};

std::string plain(std::int64_t v) { return fmt::format("{}", v); }

// Values a rank with invalid arguments may hold (outside the enum, as
// validation bounds it) are shown as numbers.
template <typename Enum>
std::string name_or_number(std::int64_t v, Enum last) {
  return v >= 0 && v <= static_cast<std::int64_t>(last) ? std::string(to_string(static_cast<Enum>(v))) : plain(v);
}
std::string hex(std::int64_t v) { return fmt::format("{:#018x}", static_cast<std::uint64_t>(v)); }

const std::vector<Field>& fields() {
  static const std::vector<Field> list = {
      {"collective", [](const Fingerprint& f) { return std::int64_t(f.operation); },
       [](std::int64_t v) { return std::string(operation_name(v)); }},
      {"memory", [](const Fingerprint& f) { return std::int64_t(f.memory); },
       [](std::int64_t v) { return name_or_number(v, Memory::cuda); }},
      {"count", [](const Fingerprint& f) { return std::int64_t(f.count); }, plain},
      {"arguments", [](const Fingerprint& f) { return std::int64_t(f.arguments); },
       [](std::int64_t v) { return std::string(v == 0 ? "valid" : "invalid (InvalidArgument there)"); }},
      {"dtype", [](const Fingerprint& f) { return std::int64_t(f.dtype); },
       [](std::int64_t v) {
         if (v == -1) return std::string("(per tensor)");
         return name_or_number(v, DataType::u64);
       }},
      {"op", [](const Fingerprint& f) { return std::int64_t(f.op); },
       [](std::int64_t v) {
         if (v == -1) return std::string("(none)");
         return name_or_number(v, ReduceOp::prod);
       }},
      {"root", [](const Fingerprint& f) { return std::int64_t(f.root); },
       [](std::int64_t v) { return v < 0 ? std::string("(none)") : plain(v); }},
      {"implementation", [](const Fingerprint& f) { return std::int64_t(f.implementation); },
       [](std::int64_t v) { return name_or_number(v, Implementation::nccl); }},
      {"config.chunk_bytes", [](const Fingerprint& f) { return std::int64_t(f.chunk_bytes); }, plain},
      {"tensors", [](const Fingerprint& f) { return std::int64_t(f.tensors); }, plain},
      {"replicas", [](const Fingerprint& f) { return std::int64_t(f.replicas); }, plain},
      {"batch layout (tensor counts, dtypes or packing)", [](const Fingerprint& f) { return std::int64_t(f.layout); },
       hex},
      {"all_reduce_spec", [](const Fingerprint& f) { return std::int64_t(f.spec); }, hex},
      {"call number", [](const Fingerprint& f) { return std::int64_t(f.sequence); }, plain},
  };
  return list;
}

}  // namespace

std::string_view operation_name(Operation operation) { return operation_name(std::int64_t(operation)); }

Operation operation_of(Collective collective) {
  switch (collective) {
    case Collective::all_reduce: return Operation::all_reduce;
    case Collective::reduce: return Operation::reduce;
    case Collective::broadcast: return Operation::broadcast;
    case Collective::reduce_scatter: return Operation::reduce_scatter;
    case Collective::all_gather: return Operation::all_gather;
  }
  return Operation::all_reduce;
}

Operation batch_operation(Collective collective) {
  switch (collective) {
    case Collective::all_reduce: return Operation::batch_all_reduce;
    case Collective::reduce: return Operation::batch_reduce;
    case Collective::broadcast: return Operation::batch_broadcast;
    case Collective::reduce_scatter:
    case Collective::all_gather: break;  // no batch form
  }
  return Operation::batch_all_reduce;
}

namespace {

// The digest of everything but the call number: four independent multiply
// chains of two words each, then a final mix (a few cycles of latency, and
// every bit of every word reaches the result).
std::uint64_t shape_digest(const Fingerprint& shape) {
  std::uint64_t w[sizeof(Fingerprint) / 8];
  std::memcpy(w, &shape, sizeof w);
  constexpr std::uint64_t kMul = 0xff51afd7ed558ccdull;
  auto rotl = [](std::uint64_t x, int r) { return (x << r) | (x >> (64 - r)); };
  std::uint64_t a = (w[0] ^ 0x9e3779b97f4a7c15ull) * kMul, b = (w[1] ^ 0xc2b2ae3d27d4eb4full) * kMul;
  std::uint64_t c = (w[2] ^ 0x165667b19e3779f9ull) * kMul, d = (w[3] ^ 0x27d4eb2f165667c5ull) * kMul;
  a = (a ^ (a >> 29) ^ w[4]) * kMul, b = (b ^ (b >> 29) ^ w[5]) * kMul;
  c = (c ^ (c >> 29) ^ w[6]) * kMul, d = (d ^ (d >> 29) ^ w[7]) * kMul;
  return a ^ rotl(b, 17) ^ rotl(c, 31) ^ rotl(d, 47);
}

}  // namespace

std::uint64_t digest(const Fingerprint& fingerprint) {
  // A training loop repeats the same call shape with a new call number each
  // time: the shape's digest is kept per thread, so a repeated call costs a
  // comparison and one mix instead of the whole digest.
  struct Cache {
    Fingerprint shape;
    std::uint64_t digest = 0;
    bool valid = false;
  };
  [[gnu::tls_model("initial-exec")]] static thread_local Cache cache;
  Fingerprint shape = fingerprint;
  shape.sequence = 0;
  if (!cache.valid || !(cache.shape == shape)) cache = {shape, shape_digest(shape), true};
  std::uint64_t h = cache.digest ^ (fingerprint.sequence * 0x9e3779b97f4a7c15ull);
  h = (h ^ (h >> 33)) * 0xc4ceb9fe1a85ec53ull;
  return h ^ (h >> 33);
}

std::uint64_t hash_bytes(const void* data, std::size_t bytes, std::uint64_t seed) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < bytes; ++i) seed = (seed ^ p[i]) * 1099511628211ull;
  return seed;
}

std::uint64_t batch_layout(std::span<const Tensor> tensors, const PackingOptions& packing,
                           long long bytes_per_pack) {
  std::uint64_t h = 1469598103934665603ull;
  for (const Tensor& t : tensors) {
    const std::uint64_t item[2] = {t.count, static_cast<std::uint64_t>(t.dtype)};
    h = hash_bytes(item, sizeof item, h);
  }
  const std::int64_t options[4] = {packing.num_packs, packing.agg_small_grads_max_bytes,
                                   packing.agg_small_grads_max_group, bytes_per_pack};
  return hash_bytes(options, sizeof options, h);
}

std::uint64_t spec_hash(const Spec& spec) {
  std::uint64_t h = 1469598103934665603ull;
  for (const SpecEntry& e : spec.entries) {
    h = hash_bytes(e.algorithm.data(), e.algorithm.size(), h);
    const std::int64_t numbers[2] = {e.shards, e.limit};
    h = hash_bytes(numbers, sizeof numbers, h);
  }
  return h;
}

std::string describe_disagreement(std::span<const Fingerprint> all) {
  std::string text;
  for (const Field& field : fields()) {
    std::map<std::int64_t, std::vector<int>> holders;  // value -> ranks, ascending
    for (std::size_t r = 0; r < all.size(); ++r) holders[field.value(all[r])].push_back(static_cast<int>(r));
    if (holders.size() < 2) continue;
    std::string clause = fmt::format("{}: ", field.name);
    bool first = true;
    for (const auto& [value, ranks] : holders) {
      clause += fmt::format("{}{} on rank{} {}", first ? "" : ", ", field.show(value), ranks.size() > 1 ? "s" : "",
                            util::ranges(ranks));
      first = false;
    }
    text += (text.empty() ? "" : "; ") + clause;
  }
  return text;
}

void throw_mismatch(const CallInfo& info, int rank, std::span<const Fingerprint> all) {
  throw Mismatch(fmt::format(
      "strata [{}]: {} #{} on rank {}: the ranks of this communicator disagree on this call: {}. Every rank raises "
      "Mismatch before any data moved; the communicator stays usable. Make every rank call the same collective with "
      "the same count, dtype, op, root and options, in the same order",
      util::where(), info.collective, info.sequence, rank, describe_disagreement(all)));
}

}  // namespace strata::plan
