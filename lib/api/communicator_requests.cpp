// Communicator's non-blocking and persistent calls: each prepares its call
// as the blocking form does (api/calls.hpp), copies what the call points at
// into storage the request owns, and hands the request to the Session's
// request queue (api/request_queue.hpp). A call whose arguments failed
// validation still becomes a request: it refuses in its turn, so the other
// ranks raise Mismatch instead of waiting. A CUDA request records where its
// producer is at each start and keeps the GPU work its run enqueued, which
// test() and wait() look at.
#include <memory>
#include <optional>
#include <vector>

#include "api/calls.hpp"
#include "api/session.hpp"
#include "strata/communicator.hpp"

namespace strata {
namespace {

// What every started call keeps: the Session that runs it, and for CUDA
// tensors where its producer was at the start and the GPU work its run
// left in flight.
template <typename AnyCall>
struct StartedCall : api::RequestState {
  api::Session* session = nullptr;
  CommunicationOptions options;
  AnyCall call;
  std::optional<InvalidArgument> invalid;  // this rank refuses it, in its turn
  exec::Ordering ordering;                 // CUDA: the producer at the start
  std::shared_ptr<exec::Flight> flight;    // CUDA: the work the last run enqueued

  ~StartedCall() override { give_back(); }

  void on_start() override {
    give_back();
    ordering = session->order_now(call);
    call.ordering = ordering.ready.empty() ? nullptr : &ordering;
  }
  bool landed(bool block) override {
    if (!flight) return true;
    const std::shared_ptr<exec::Flight> up = flight;
    if (block) {
      flight.reset();
      session->wait(*up);
      return true;
    }
    if (!session->landed(*up)) return false;
    flight.reset();
    return true;
  }

  // The fences of the last start, given back.
  void give_back() noexcept {
    if (session && !ordering.ready.empty()) session->settle(ordering);
    ordering = {};
  }
};

// A started call with everything it points at (its options): the
// request's one allocation. Never moved once made, so call.options stays
// valid.
struct CallRequest final : StartedCall<exec::Call> {
  void run() override {
    if (invalid) session->refuse_started(*invalid, call);
    flight = session->run_started(call);
  }
};

// The same for a batch: its tensor lists and callback as well.
struct BatchRequest final : StartedCall<exec::BatchCall> {
  std::vector<std::vector<Tensor>> batch;
  std::function<void(std::size_t)> on_pack_done;

  void run() override {
    if (invalid) session->refuse_started(*invalid, call);
    flight = session->run_started(call);
  }
};

// Where a started request runs: on the progress thread where it may (the
// thread is started for CUDA requests where MPI allows any thread), or on
// the starting thread at once when its run only enqueues GPU work.
template <typename Request>
void adopt(api::Session& session, Request& request, bool persistent) {
  const bool cuda = session.on_cuda(request.call);
  bool thread_may_run = false;
  if (!request.invalid) {
    if (cuda && session.thread_may_run(request.call)) session.requests().start_thread();
    thread_may_run = session.requests().has_thread() && session.thread_may_run(request.call);
  }
  session.requests().adopt(request, persistent, thread_may_run);
  request.run_at_start = cuda && !thread_may_run && !request.invalid && session.only_enqueues(request.call);
}

}  // namespace

Request Communicator::start(const api::Prepared& prepared, bool persistent) {
  auto request = std::make_shared<CallRequest>();
  request->session = session_.get();
  request->options = *prepared.call.options;
  request->call = prepared.call;
  request->call.options = &request->options;
  request->call.request = true;
  request->call.persistent = persistent;
  request->invalid = prepared.invalid;
  adopt(*session_, *request, persistent);
  if (!persistent) {
    request->on_start();
    session_->requests().start(request);
  }
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
  request->call.request = true;
  request->invalid = api::validate_batch_all_reduce(tensors, op, packing, options);
  adopt(*session_, *request, false);
  request->on_start();
  session_->requests().start(request);
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
