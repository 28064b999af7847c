// Batches at the api layer: numbering and checking a batch as one call,
// the INFO log of its plan, and the plan a batch would run (Communicator::
// plan_for). The packs run in the executor (exec/batch.cpp).
#include <fmt/format.h>

#include "api/session.hpp"
#include "api/validate.hpp"
#include "exec/registry.hpp"
#include "plan/packing.hpp"
#include "util/log.hpp"

namespace strata::api {

// At STRATA_DEBUG=INFO, prints the plan of a batch whose shape (tensors,
// packing, bytes_per_pack) differs from the last one printed: once for a
// training loop, again when its batch changes.
void Session::log_batch_plan(const BatchCall& call) {
  if (util::log_level() < util::LogLevel::info) return;
  std::uint64_t shape = 1469598103934665603ull;  // FNV-1a over the plan's inputs
  auto mix = [&shape](std::uint64_t v) { shape = (shape ^ v) * 1099511628211ull; };
  for (const auto& replicas : *call.batch) mix(replicas.front().count), mix(std::uint64_t(replicas.front().dtype));
  mix(std::uint64_t(call.packing.num_packs)), mix(std::uint64_t(call.packing.agg_small_grads_max_bytes));
  mix(std::uint64_t(call.packing.agg_small_grads_max_group)), mix(std::uint64_t(call.options->bytes_per_pack));
  mix(std::uint64_t(call.collective)), mix(call.batch->empty() ? 0 : call.batch->front().size());
  if (shape == last_logged_batch_) return;
  last_logged_batch_ = shape;
  std::vector<Tensor> tensors;
  for (const auto& replicas : *call.batch) tensors.push_back(replicas.front());
  util::log(util::LogLevel::info, "{} of {} tensors x {} replica(s): {}", to_string(call.collective), tensors.size(),
            call.batch->empty() ? 0 : call.batch->front().size(),
            plan_batch(tensors, call.packing, *call.options, call.spec, call.collective).to_string());
}

std::optional<InvalidArgument> Session::precheck(const BatchCall& call) {
  if (!on_cuda(call)) return std::nullopt;
  try {
    validate_replica_devices(*call.batch, executor_.gpu_row());
  } catch (const InvalidArgument& e) {
    return e;
  }
  return executor_.refusal(call);
}

bool Session::only_enqueues(const BatchCall& call) const { return executor_.only_enqueues(call); }

std::shared_ptr<exec::Flight> Session::run_call(const BatchCall& call) {
  return recorder_.dumping([&] {
    executor_.ensure_usable();
    log_batch_plan(call);
    plan::Fingerprint fingerprint;
    const exec::Ticket ticket = numbered(fingerprint, [&](std::uint64_t n) { return fingerprints_.of(call, n); });
    return recorded(call, ticket.sequence, [&] { return executor_.run_batch(call, ticket); });
  });
}

Plan Session::plan_batch(std::span<const Tensor> tensors, const PackingOptions& packing,
                         const CommunicationOptions& options, const plan::Spec* spec, Collective collective) const {
  const std::vector<std::vector<Tensor>> batch = [&] {
    std::vector<std::vector<Tensor>> b;
    for (const Tensor& t : tensors) b.push_back({t});
    return b;
  }();
  BatchCall call;
  call.batch = &batch;
  call.packing = packing;
  call.options = &options;
  Plan result;
  result.collective = collective;
  result.memory = tensors.empty() ? Memory::host : tensors.front().memory;
  for (const plan::Pack& pack : plan::make_packs(exec::shapes_of(batch), packing, executor_.bytes_per_pack(call))) {
    PlannedPack planned{pack.dtype, pack.count, pack.bytes(), {}, {}};
    for (const plan::PackPiece& piece : pack.pieces)
      if (planned.tensors.empty() || planned.tensors.back() != piece.tensor) planned.tensors.push_back(piece.tensor);
    planned.algorithm =
        choose(collective, pack.bytes(), result.memory, options.implementation, spec).describe();
    result.packs.push_back(std::move(planned));
  }
  return result;
}

}  // namespace strata::api
