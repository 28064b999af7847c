#include "api/call_check.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <string_view>
#include <vector>

#include "plan/collective.hpp"
#include "plan/packing.hpp"
#include "util/check.hpp"
#include "util/ranges.hpp"
#include "util/trace.hpp"
#include "util/where.hpp"
#include "strata/errors.hpp"

namespace strata::api {

bool call_check_wanted(const Config& config) {
  const char* env = std::getenv("STRATA_CHECK");
  if (!env) return config.check_calls;
  const std::string_view value(env);
  const bool off = value == "off" || value == "0" || value == "false" || value == "no" || value == "OFF";
  return config.check_calls && !off;
}

bool verification_wanted(const Config& config) {
  const char* env = std::getenv("STRATA_VERIFY");
  if (!env) return config.verify == Verification::checksum;
  const std::string_view value(env);
  if (value == "checksum") return true;
  if (value == "off") return false;
  throw InvalidArgument(util::located(fmt::format(
      "STRATA_VERIFY = '{}' must be checksum (the integrity check after each call) or off", value)));
}

namespace {

// Ranks `these` and `those` asked for a setting that must be alike on every
// rank (`settings`, carried by `variable`) differently: InvalidArgument,
// thrown on every rank alike, naming both groups and how to pass the
// variable to every rank through any launcher.
[[noreturn]] void throw_unlike(std::string_view these_are, const std::vector<int>& these, std::string_view those_are,
                               const std::vector<int>& those, std::string_view settings, std::string_view variable) {
  throw InvalidArgument(fmt::format(
      "strata [{}]: creating a Communicator: {} rank(s) {} {} rank(s) {} ({}): set it alike on every rank "
      "(give every rank {}: strata-launch --env {}, Open MPI's mpirun -x {}, MPICH's mpiexec -genv {} VALUE)",
      util::where(), these_are, util::ranges(these), those_are, util::ranges(those), settings, variable, variable,
      variable, variable));
}

}  // namespace

// The same exchange says whether every rank traces (STRATA_TRACE), the
// condition for aligning trace clocks, which is collective, and whether
// every rank asks for auto from the cost model.
Agreed agree_on_call_check(MPI_Comm comm, int size, bool wanted, bool model_wanted, bool verify_wanted,
                           const plan::Numerics& numerics) {
  enum : int { kChecks = 1, kTraces = 2, kModels = 4, kVerifies = 8, kNumericsShift = 4 };
  auto numerics_of = [](int word) { return word >> kNumericsShift; };
  std::vector<int> all(static_cast<std::size_t>(size));
  const int numerics_code = static_cast<int>(numerics.reproducible) * 2 + (numerics.accumulate_f32 ? 1 : 0);
  const int mine = (wanted ? kChecks : 0) | (util::trace::enabled() ? kTraces : 0) | (model_wanted ? kModels : 0) |
                   (verify_wanted ? kVerifies : 0) | (numerics_code << kNumericsShift);
  STRATA_CHECK_MPI(MPI_Allgather(&mine, 1, MPI_INT, all.data(), 1, MPI_INT, comm));
  std::vector<int> on, off, models, no_model, verifying, not_verifying, numerics_like_rank0, numerics_unlike;
  Agreed agreed{.every_rank_traces = true, .every_rank_models = true};
  for (int r = 0; r < size; ++r) {
    const int theirs = all[static_cast<std::size_t>(r)];
    (theirs & kChecks ? on : off).push_back(r);
    (theirs & kModels ? models : no_model).push_back(r);
    (theirs & kVerifies ? verifying : not_verifying).push_back(r);
    agreed.every_rank_traces &= (theirs & kTraces) != 0;
    (numerics_of(theirs) == numerics_of(all.front()) ? numerics_like_rank0 : numerics_unlike).push_back(r);
  }
  agreed.every_rank_models = no_model.empty();
  if (!on.empty() && !off.empty())
    throw_unlike("the call check is on at", on, "and off at", off, "Config::check_calls, STRATA_CHECK", "STRATA_CHECK");
  if (!models.empty() && !no_model.empty())
    throw_unlike("auto from the cost model is asked for at", models, "and not at", no_model,
                 "STRATA_MODEL_FILE, and a spec of auto", "STRATA_MODEL_FILE");
  if (!numerics_unlike.empty())
    throw_unlike("the numerics differ:", numerics_unlike, "reduce unlike", numerics_like_rank0,
                 "Config::reproducible and accumulate_f32, STRATA_REPRODUCIBLE, STRATA_ACCUMULATE",
                 "STRATA_REPRODUCIBLE");
  if (!verifying.empty() && !not_verifying.empty())
    throw_unlike("the integrity check is on at", verifying, "and off at", not_verifying, "Config::verify, STRATA_VERIFY",
                 "STRATA_VERIFY");
  return agreed;
}

plan::Fingerprint Fingerprints::common(Collective collective, ReduceOp op, int root, Memory memory,
                                       const CommunicationOptions& options, const plan::Spec* spec,
                                       std::uint64_t sequence) const {
  plan::Fingerprint f;
  f.sequence = sequence;
  f.op = plan::reduces(collective) ? static_cast<std::int32_t>(op) : -1;
  f.root = plan::rooted(collective) ? root : -1;
  f.memory = static_cast<std::int8_t>(memory);
  f.implementation = static_cast<std::int16_t>(options.implementation);
  f.chunk_bytes = static_cast<std::int32_t>(chunk_bytes_);
  f.spec = plans_->spec_hash(spec);
  return f;
}

plan::Fingerprint Fingerprints::of(const exec::Call& call, std::uint64_t sequence) const {
  plan::Fingerprint f =
      common(call.collective, call.job.op, call.job.root, call.memory, *call.options, call.spec, sequence);
  f.operation = plan::operation_of(call.collective);
  f.count = call.job.count;
  f.dtype = static_cast<std::int32_t>(call.job.dtype);
  return f;
}

plan::Fingerprint Fingerprints::of(const exec::BatchCall& call, std::uint64_t sequence) const {
  std::vector<Tensor> firsts;
  for (const auto& replicas : *call.batch) firsts.push_back(replicas.empty() ? Tensor{} : replicas.front());
  plan::Fingerprint f = common(call.collective, call.op, call.root,
                               firsts.empty() ? Memory::host : firsts.front().memory, *call.options, call.spec,
                               sequence);
  f.operation = plan::batch_operation(call.collective);
  for (const Tensor& t : firsts) f.count += t.count;
  f.layout = plan::batch_layout(firsts, call.packing, call.options->bytes_per_pack);
  f.dtype = -1;
  f.tensors = static_cast<std::int32_t>(firsts.size());
  f.replicas = call.batch->empty() ? 0 : static_cast<std::int32_t>(call.batch->front().size());
  return f;
}

}  // namespace strata::api
