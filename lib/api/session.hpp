// Session: the state behind one strata::Communicator and the entry the
// public calls (communicator.cpp) and the TensorFlow-named facades
// (cross_device_ops.cpp) funnel into after validation. It makes the
// communicator (duplicate, nodes, topology, the agreements every rank must
// share), numbers every call, builds the fingerprint the ranks compare,
// keeps refused calls collective, orders blocking calls after the started
// requests, and hands each call to the executor (exec::Executor), which
// runs it. Internal header.
#pragma once

#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "api/call_check.hpp"
#include "api/call_recorder.hpp"
#include "api/request_queue.hpp"
#include "exec/call.hpp"
#include "exec/executor.hpp"
#include "plan/choose.hpp"
#include "plan/fingerprint.hpp"
#include "plan/spec.hpp"
#include "strata/communicator.hpp"
#include "strata/plan.hpp"
#include "strata/topology.hpp"
#include "topo/node_split.hpp"
#include "util/trace.hpp"

namespace strata::api {

using exec::BatchCall;
using exec::Call;

class Session {
 public:
  // Collective over `comm` (see Communicator's constructor).
  Session(MPI_Comm comm, Config config);
  // Frees the duplicated communicator and everything built on it. Never throws.
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  const Topology& topology() const { return topology_; }
  bool broken() const { return executor_.broken(); }
  // Communicator::check().
  void check() {
    recorder_.dumping([&] {
      executor_.check();
      return 0;
    });
  }
  // Communicator::dump_flight_record() (api/call_recorder.hpp).
  std::string dump_flight_record() { return recorder_.dump_on_demand(); }
  const plan::Spec& spec() const { return executor_.plans().spec(); }
  std::string spec_map() const {
    return plan::describe_map(executor_.plans().spec(), executor_.plans().layout());
  }

  // Runs one collective; throws as the public calls say. Before any data
  // moves, every rank checks that all make the same call (unless
  // Config::check_calls is false or STRATA_CHECK=off): Mismatch on every
  // rank otherwise. A timeout names the ranks that really did not arrive
  // (a roll call, exec/roll_call.hpp). The requests started before it run
  // first (requests()). A CUDA call given a stream returns once its work is
  // enqueued (exec/executor.hpp); one whose plan has host stages goes to
  // the progress thread where MPI allows any thread, its caller's stream
  // held until it ran, and so does every such call after it until those
  // ran (they must stay in order): their errors come from the next call
  // or check().
  void run(const Call& call);

  // Runs a batch, pack by pack, calling on_pack_done(i) as pack i lands.
  // As run().
  void run_batch(const BatchCall& call);

  // The same, for a request in its turn (the request queue calls them):
  // the flight of a CUDA request's enqueued work, or null.
  std::shared_ptr<exec::Flight> run_started(const Call& call);
  std::shared_ptr<exec::Flight> run_started(const BatchCall& call);

  // CUDA requests (exec::Executor): where the producer is at a start, the
  // fences given back after the run, and the flight of the run's work.
  exec::Ordering order_now(const Call& call) { return executor_.order_now(call, false); }
  exec::Ordering order_now(const BatchCall& call) { return executor_.order_now(call, false); }
  void settle(const exec::Ordering& ordering) noexcept { executor_.settle(ordering); }
  bool landed(exec::Flight& flight) { return executor_.landed(flight); }
  void wait(exec::Flight& flight) { executor_.wait(flight); }
  // Whether a call is on CUDA tensors, and whether its run only enqueues
  // GPU work (no host stages), so that a request may run at its start.
  static bool on_cuda(const Call& call) { return call.memory == Memory::cuda; }
  static bool on_cuda(const BatchCall& call) {
    return !call.batch->empty() && call.batch->front().front().memory == Memory::cuda;
  }
  bool only_enqueues(const Call& call) const;
  bool only_enqueues(const BatchCall& call) const;
  // After a handed-over call ran on the progress thread: its error (null
  // if none) for the next call and check(), its gate opened.
  void handed_over_ran(const exec::Ordering& ordering, std::exception_ptr error) noexcept;
  [[noreturn]] void refuse_started(const InvalidArgument& error, const Call& call);
  [[noreturn]] void refuse_started(const InvalidArgument& error, const BatchCall& call);

  // The communicator's started requests (non-blocking and persistent calls).
  RequestQueue& requests() { return requests_; }

  // Whether the progress thread takes `call` (exec::Executor::thread_may_run).
  bool thread_may_run(const Call& call) const { return executor_.thread_may_run(call); }
  bool thread_may_run(const BatchCall& call) const { return executor_.thread_may_run(call); }

  // A call whose arguments failed validation on this rank is still
  // collective: with the call check on (and more than one rank), this rank
  // takes the call's number and joins the check with `call` as passed,
  // marked invalid, so every other rank raises Mismatch naming it instead
  // of waiting for data that never comes, and the ranks stay in step.
  // Always throws: `error` (InvalidArgument) on this rank, or
  // DeadlineExceeded / PeerFailure when the check itself fails.
  [[noreturn]] void refuse(const InvalidArgument& error, const Call& call);
  [[noreturn]] void refuse(const InvalidArgument& error, const BatchCall& call);

  // Ends the requests (runs what was started) before the communicator goes.
  void shut_down_requests() noexcept { requests_.shut_down(); }

  // The plan for one call of `bytes` bytes (no communication).
  plan::Choice choose(Collective collective, std::size_t bytes, Memory memory, Implementation implementation,
                      const plan::Spec* spec = nullptr) const {
    return executor_.plans().choose(collective, bytes, memory, implementation, spec);
  }

  // The plan a batch of `tensors` would run as `collective` (no communication).
  Plan plan_batch(std::span<const Tensor> tensors, const PackingOptions& packing,
                  const CommunicationOptions& options, const plan::Spec* spec = nullptr,
                  Collective collective = Collective::all_reduce) const;

 private:
  // run() and run_batch(), and run_started() of either: the same steps
  // for a call and a batch (session.cpp).
  template <typename AnyCall>
  void run_any(const AnyCall& call);
  template <typename AnyCall>
  std::shared_ptr<exec::Flight> run_any_started(const AnyCall& call);
  // One call or batch, numbered and recorded, without its span.
  std::shared_ptr<exec::Flight> run_call(const Call& call);
  std::shared_ptr<exec::Flight> run_call(const BatchCall& call);
  // The same once numbered (run_call's part in the flight recorder).
  template <typename AnyCall, typename Work>
  std::shared_ptr<exec::Flight> recorded(const AnyCall& call, std::uint64_t sequence, Work&& work) {
    return recorder_.recorded(call, sequence, [&]() -> const plan::CallInfo& { return executor_.current(); }, work);
  }
  // What refuses a call before it takes a number: the CUDA devices
  // (api/validate.hpp), then what the executor cannot run as asked.
  std::optional<InvalidArgument> precheck(const Call& call);
  std::optional<InvalidArgument> precheck(const BatchCall& call);
  // Whether a stream-ordered call goes to the progress thread (run()).
  template <typename AnyCall>
  bool handing_over(const AnyCall& call) {
    return on_cuda(call) && call.options->stream && (handed_over_ > 0 || executor_.hands_over(call));
  }
  // Queues `call` for the progress thread, its caller's stream held until
  // it ran (exec::Executor::order_now with a gate); returns at once.
  template <typename AnyCall>
  void hand_over(const AnyCall& call);

  // Runs `work` (one public call); with STRATA_TRACE on, inside its span,
  // whose args say what ran and how it ended (api/call_trace.cpp). A call
  // that leaves the communicator broken writes the trace file at once: the
  // process may not live to write it at the end. Off, one branch.
  template <typename AnyCall, typename Work>
  void traced(const AnyCall& call, Work&& work) {
    if (!util::trace::enabled()) [[likely]] {
      work();
      return;
    }
    util::trace::Span span(span_name(call));
    const std::uint64_t before = sequence_;
    try {
      work();
    } catch (...) {
      end_call_span(span, call, before, util::trace::current_error_name(), util::trace::current_error_message());
      throw;
    }
    end_call_span(span, call, before, "ok", {});
  }
  static std::string_view span_name(const Call& call) {
    return call.name.empty() ? to_string(call.collective) : call.name;
  }
  static std::string_view span_name(const BatchCall& call) { return call.name(); }
  void end_call_span(util::trace::Span& span, const Call& call, std::uint64_t before, std::string_view outcome,
                     std::string_view error);
  void end_call_span(util::trace::Span& span, const BatchCall& call, std::uint64_t before,
                     std::string_view outcome, std::string_view error);
  // The args every call span has (its number, outcome, error), then ends
  // it, and writes the file when the communicator is broken.
  void end_span_common(util::trace::Span& span, std::uint64_t before, std::string_view outcome,
                       std::string_view error);

  // refuse(): unless there is nobody to tell, takes the call's number and
  // checks `as_passed()` (built after the number is taken) marked invalid.
  [[noreturn]] void refuse_numbered(const InvalidArgument& error,
                                    const std::function<plan::Fingerprint()>& as_passed, double timeout_seconds,
                                    std::string_view collective);
  // The next call's number and, with the check on, its fingerprint in
  // `storage` (made by `fingerprint(sequence)`).
  template <typename Fingerprint>
  exec::Ticket numbered(plan::Fingerprint& storage, Fingerprint&& fingerprint) {
    // Every call takes one number, whatever happens next, so the ranks stay in step.
    const std::uint64_t number = sequence_.fetch_add(1, std::memory_order_relaxed) + 1;
    if (!check_calls_) return {number, nullptr};
    storage = fingerprint(number);
    return {number, &storage};
  }
  void log_batch_plan(const BatchCall& call);

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
  // The number of the last call taken (the GPU watcher reads it to answer
  // roll calls).
  std::atomic<std::uint64_t> sequence_{0};
  bool check_calls_ = true;    // Config::check_calls and STRATA_CHECK, and more than one rank
  CallRecorder recorder_;      // every call into the flight recorder (from construction)
  topo::NodeSplit split_;      // nodes, from construction
  Topology topology_;          // from construction, after split
  exec::Executor executor_;    // runs every call (from construction)
  Fingerprints fingerprints_;  // what the call check compares (over the executor's plans)
  std::uint64_t last_logged_batch_ = 0;  // shape of the batch whose plan INFO printed last
  std::atomic<int> handed_over_{0};      // handed-over calls not yet run
  // Last, so that it goes first: its shut-down runs what is still queued
  // while everything above still exists.
  RequestQueue requests_;
};

// The Session of a Communicator: the one door for lib/api's facades.
Session& session_of(Communicator& comm);

}  // namespace strata::api
