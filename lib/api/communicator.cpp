// Communicator: the public entry points. Each validates its arguments (the
// validate stage, api/validate.hpp) and hands the call to its Session,
// which plans, executes and finishes it (api/session.hpp). A call that
// fails validation goes to Session::refuse: it is still collective, so the
// other ranks learn of it (Mismatch) instead of waiting.
#include "strata/communicator.hpp"

#include <fmt/format.h>

#include <vector>

#include "api/calls.hpp"
#include "api/session.hpp"
#include "api/validate.hpp"
#include "plan/packing.hpp"

namespace strata {

namespace api {
Session& session_of(Communicator& comm) { return *comm.session_; }
}  // namespace api

Communicator::Communicator(MPI_Comm comm, Config config)
    : session_(std::make_unique<api::Session>(comm, std::move(config))) {}

Communicator::~Communicator() = default;
Communicator::Communicator(Communicator&&) noexcept = default;
Communicator& Communicator::operator=(Communicator&&) noexcept = default;

int Communicator::rank() const { return session_->rank(); }
int Communicator::size() const { return session_->size(); }
const Topology& Communicator::topology() const { return session_->topology(); }
bool Communicator::broken() const { return session_->broken(); }

void Communicator::check() { session_->check(); }

std::string Communicator::dump_flight_record() { return session_->dump_flight_record(); }

std::string Communicator::algorithm_for(std::size_t bytes, Collective collective, Memory memory) const {
  return session_->choose(collective, bytes, memory, Implementation::automatic).describe();
}

AllReduceSpec Communicator::all_reduce_spec() const {
  return session_->spec().is_auto() ? AllReduceSpec() : AllReduceSpec(session_->spec().entries);
}

std::string Communicator::spec_map() const { return session_->spec_map(); }

Plan Communicator::plan_for(std::span<const Tensor> tensors, const PackingOptions& packing,
                            const CommunicationOptions& options) const {
  api::validate_options(options);
  plan::validate_packing(packing);
  for (std::size_t i = 0; i < tensors.size(); ++i)
    api::validate_tensor(tensors[i], fmt::format("tensors[{}]", i), /*data_required=*/false);
  api::validate_same_memory(tensors, "tensors");
  api::validate_batch_size(tensors, "tensors");
  if (!tensors.empty()) api::validate_implementation(options, tensors[0].memory, "tensors");
  return session_->plan_batch(tensors, packing, options);
}

void Communicator::all_reduce(Tensor in, Tensor out, ReduceOp op, const CommunicationOptions& options) {
  run(api::prepare_all_reduce(size(), in, out, op, options));
}

void Communicator::reduce(Tensor in, Tensor out, ReduceOp op, int root, const CommunicationOptions& options) {
  run(api::prepare_reduce(size(), rank(), in, out, op, root, options));
}

void Communicator::broadcast(Tensor buffer, int root, const CommunicationOptions& options) {
  run(api::prepare_broadcast(size(), buffer, root, options));
}

void Communicator::reduce_scatter(Tensor in, Tensor out, ReduceOp op, const CommunicationOptions& options) {
  run(api::prepare_reduce_scatter(size(), rank(), in, out, op, options));
}

void Communicator::all_gather(Tensor in, Tensor out, const CommunicationOptions& options) {
  run(api::prepare_all_gather(size(), rank(), in, out, options));
}

void Communicator::run(const api::Prepared& prepared) {
  if (prepared.invalid) session_->refuse(*prepared.invalid, prepared.call);
  session_->run(prepared.call);
}

void Communicator::batch_all_reduce(std::span<Tensor> tensors, ReduceOp op, const CommunicationOptions& options,
                                    std::function<void(std::size_t pack)> on_pack_done) {
  batch_all_reduce(tensors, op, PackingOptions{}, options, std::move(on_pack_done));
}

void Communicator::batch_all_reduce(std::span<Tensor> tensors, ReduceOp op, const PackingOptions& packing,
                                    const CommunicationOptions& options,
                                    std::function<void(std::size_t pack)> on_pack_done) {
  std::vector<std::vector<Tensor>> batch;
  batch.reserve(tensors.size());
  for (const Tensor& t : tensors) batch.push_back({t});
  exec::BatchCall call;
  call.batch = &batch;
  call.op = op;
  call.packing = packing;
  call.options = &options;
  call.on_pack_done = &on_pack_done;
  if (auto invalid = api::validate_batch_all_reduce(tensors, op, packing, options)) session_->refuse(*invalid, call);
  session_->run_batch(call);
}

}  // namespace strata
