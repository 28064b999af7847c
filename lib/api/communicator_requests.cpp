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

// A started call with everything it points at (its options), and the
// Session that runs it: the request's one allocation. Never moved once
// made, so call.options stays valid.
struct CallRequest final : api::RequestState {
  api::Session* session = nullptr;
  CommunicationOptions options;
  exec::Call call;
  std::optional<InvalidArgument> invalid;  // this rank refuses it, in its turn

  void run() override {
    if (invalid) session->refuse_started(*invalid, call);
    session->run_started(call);
  }
};

// The same for a batch: its tensor lists and callback as well.
struct BatchRequest final : api::RequestState {
  api::Session* session = nullptr;
  CommunicationOptions options;
  std::vector<std::vector<Tensor>> batch;
  std::function<void(std::size_t)> on_pack_done;
  exec::BatchCall call;
  std::optional<InvalidArgument> invalid;

  void run() override {
    if (invalid) session->refuse_started(*invalid, call);
    session->run_batch_started(call);
  }
};

}  // namespace

Request Communicator::start(const api::Prepared& prepared, bool persistent) {
  auto request = std::make_shared<CallRequest>();
  request->session = session_.get();
  request->options = *prepared.call.options;
  request->call = prepared.call;
  request->call.options = &request->options;
  request->invalid = prepared.invalid;
  api::Session& session = *session_;
  // (Where it may run matters only with a progress thread: planning it costs.)
  const bool thread_may_run =
      session.requests().has_thread() && !request->invalid && session.thread_may_run(request->call);
  session.requests().adopt(*request, persistent, thread_may_run);
  if (!persistent) session.requests().start(request);
  return Request(std::move(request));
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
  auto request = std::make_shared<BatchRequest>();
  request->session = session_.get();
  request->options = options;
  request->batch.reserve(tensors.size());
  for (const Tensor& t : tensors) request->batch.push_back({t});
  request->on_pack_done = std::move(on_pack_done);
  request->call.batch = &request->batch;
  request->call.op = op;
  request->call.packing = packing;
  request->call.options = &request->options;
  request->call.on_pack_done = &request->on_pack_done;
  request->invalid = api::validate_batch_all_reduce(tensors, op, packing, options);
  api::Session& session = *session_;
  const bool thread_may_run =
      session.requests().has_thread() && !request->invalid && session.thread_may_run(request->call);
  session.requests().adopt(*request, false, thread_may_run);
  session.requests().start(request);
  return Request(std::move(request));
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
