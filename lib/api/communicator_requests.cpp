// Communicator's non-blocking and persistent calls: each prepares its call
// as the blocking form does (api/calls.hpp), copies what the call points at
// into storage the request owns, and hands the request to the Session's
// request queue (api/request_queue.hpp). A call whose arguments failed
// validation still becomes a request: it refuses in its turn, so the other
// ranks raise Mismatch instead of waiting.
#include <memory>
#include <optional>
#include <vector>

#include "api/calls.hpp"
#include "api/session.hpp"
#include "strata/communicator.hpp"

namespace strata {
namespace {

// A request's call with everything it points at. Shared by the request's
// run closure; never moved once made, so the pointers inside stay valid.
struct OwnedCall {
  CommunicationOptions options;
  api::Call call;
  std::optional<InvalidArgument> invalid;
};

struct OwnedBatch {
  CommunicationOptions options;
  std::vector<std::vector<Tensor>> batch;
  std::function<void(std::size_t)> on_pack_done;
  api::BatchCall call;
  std::optional<InvalidArgument> invalid;
};

}  // namespace

Request Communicator::start(const api::Prepared& prepared, bool persistent) {
  auto owned = std::make_shared<OwnedCall>();
  owned->options = *prepared.call.options;
  owned->call = prepared.call;
  owned->call.options = &owned->options;
  owned->invalid = prepared.invalid;
  api::Session& session = *session_;
  const bool thread_may_run = !owned->invalid && session.thread_may_run(owned->call);
  auto state = session.requests().make(
      [&session, owned] {
        if (owned->invalid) session.refuse_started(*owned->invalid, owned->call);
        session.run_started(owned->call);
      },
      persistent, thread_may_run);
  if (!persistent) session.requests().start(state);
  return Request(std::move(state));
}

Request Communicator::iall_reduce(Tensor in, Tensor out, ReduceOp op, const CommunicationOptions& options) {
  return start(api::prepare_all_reduce(size(), in, out, op, options), false);
}

Request Communicator::ireduce(Tensor in, Tensor out, ReduceOp op, int root, const CommunicationOptions& options) {
  return start(api::prepare_reduce(size(), rank(), in, out, op, root, options), false);
}

Request Communicator::ibroadcast(Tensor buffer, int root, const CommunicationOptions& options) {
  return start(api::prepare_broadcast(size(), buffer, root, options), false);
}

Request Communicator::ireduce_scatter(Tensor in, Tensor out, ReduceOp op, const CommunicationOptions& options) {
  return start(api::prepare_reduce_scatter(size(), rank(), in, out, op, options), false);
}

Request Communicator::iall_gather(Tensor in, Tensor out, const CommunicationOptions& options) {
  return start(api::prepare_all_gather(size(), rank(), in, out, options), false);
}

Request Communicator::ibatch_all_reduce(std::span<Tensor> tensors, ReduceOp op, const PackingOptions& packing,
                                        const CommunicationOptions& options,
                                        std::function<void(std::size_t pack)> on_pack_done) {
  auto owned = std::make_shared<OwnedBatch>();
  owned->options = options;
  owned->batch.reserve(tensors.size());
  for (const Tensor& t : tensors) owned->batch.push_back({t});
  owned->on_pack_done = std::move(on_pack_done);
  owned->call.batch = &owned->batch;
  owned->call.op = op;
  owned->call.packing = packing;
  owned->call.options = &owned->options;
  owned->call.on_pack_done = &owned->on_pack_done;
  owned->invalid = api::validate_batch_all_reduce(tensors, op, packing, options);
  api::Session& session = *session_;
  const bool thread_may_run = !owned->invalid && session.thread_may_run(owned->call);
  auto state = session.requests().make(
      [&session, owned] {
        if (owned->invalid) session.refuse_started(*owned->invalid, owned->call);
        session.run_batch_started(owned->call);
      },
      false, thread_may_run);
  session.requests().start(state);
  return Request(std::move(state));
}

Request Communicator::all_reduce_init(Tensor in, Tensor out, ReduceOp op, const CommunicationOptions& options) {
  return start(api::prepare_all_reduce(size(), in, out, op, options), true);
}

Request Communicator::reduce_init(Tensor in, Tensor out, ReduceOp op, int root, const CommunicationOptions& options) {
  return start(api::prepare_reduce(size(), rank(), in, out, op, root, options), true);
}

Request Communicator::broadcast_init(Tensor buffer, int root, const CommunicationOptions& options) {
  return start(api::prepare_broadcast(size(), buffer, root, options), true);
}

Request Communicator::reduce_scatter_init(Tensor in, Tensor out, ReduceOp op, const CommunicationOptions& options) {
  return start(api::prepare_reduce_scatter(size(), rank(), in, out, op, options), true);
}

Request Communicator::all_gather_init(Tensor in, Tensor out, const CommunicationOptions& options) {
  return start(api::prepare_all_gather(size(), rank(), in, out, options), true);
}

}  // namespace strata
