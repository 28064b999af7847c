// Session: the state behind one strata::Communicator and the entry the
// public calls (communicator.cpp) and the TensorFlow-named facades
// (cross_device_ops.cpp) funnel into after validation. It runs the plan,
// execute and finish stages:
//   plan     plan::choose / plan::make_packs (lib/plan), cached per shape;
//   execute  exec::run_host or exec::run_gpu (lib/exec);
//   finish   exec::finish_host (mean), pack callbacks, and marking the
//            communicator broken after a timeout or a backend failure.
// Internal header.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "api/call.hpp"
#include "api/call_check.hpp"
#include "api/gpu_runtime.hpp"
#include "api/health.hpp"
#include "api/plan_cache.hpp"
#include "api/request_queue.hpp"
#include "exec/execute.hpp"
#include "exec/roll_call.hpp"
#include "gpu/backend.hpp"
#include "host/shm_segment.hpp"
#include "plan/choose.hpp"
#include "plan/fingerprint.hpp"
#include "plan/job.hpp"
#include "plan/spec.hpp"
#include "strata/communicator.hpp"
#include "strata/plan.hpp"
#include "strata/topology.hpp"
#include "topo/gpu_plane.hpp"
#include "topo/node_split.hpp"
#include "util/breaking.hpp"
#include "util/arena.hpp"
#include "util/deadline.hpp"
#include "util/trace.hpp"
#include "util/workspace.hpp"

namespace strata::api {

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
  bool broken() const { return health_.broken(); }
  // Communicator::check().
  void check() { health_.ensure_usable(); }
  const plan::Spec& spec() const { return plans_.spec(); }
  std::string spec_map() const { return plan::describe_map(plans_.spec(), plans_.layout()); }

  // Runs one collective; throws as the public calls say. Before any data
  // moves, every rank checks that all make the same call (unless
  // Config::check_calls is false or STRATA_CHECK=off): Mismatch on every
  // rank otherwise. A timeout names the ranks that really did not arrive
  // (a roll call, exec/roll_call.hpp). Blocking: the requests started
  // before it run first (requests()).
  void run(const Call& call);

  // Runs a batch, pack by pack, calling on_pack_done(i) as pack i lands.
  // Blocking, like run().
  void run_batch(const BatchCall& call);

  // The same, for a request in its turn (the request queue calls them).
  void run_started(const Call& call);
  void run_batch_started(const BatchCall& call);
  [[noreturn]] void refuse_started(const InvalidArgument& error, const Call& call);
  [[noreturn]] void refuse_started(const InvalidArgument& error, const BatchCall& call);

  // The communicator's started requests (non-blocking and persistent calls).
  RequestQueue& requests() { return requests_; }

  // Whether the progress thread takes `call`: host memory, at least 64 KiB
  // (smaller ones cost more to hand over than to run), and running it makes
  // no MPI call (one node over shared memory, or a communicator of one
  // rank) or MPI allows calls from any thread.
  bool thread_may_run(const Call& call) const;
  bool thread_may_run(const BatchCall& call) const;

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
    return plans_.choose(collective, bytes, memory, implementation, spec);
  }

  // The plan a batch of `tensors` would run as `collective` (no communication).
  Plan plan_batch(std::span<const Tensor> tensors, const PackingOptions& packing,
                  const CommunicationOptions& options, const plan::Spec* spec = nullptr,
                  Collective collective = Collective::all_reduce) const;

 private:
  void run_call(const Call& call);             // run() without its trace span
  void run_batch_call(const BatchCall& call);  // run_batch() without its trace span

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

  // Breaks the communicator (health_) and abandons the buffers work given
  // up on may still touch.
  void mark_broken(const char* reason);
  // Runs `work`; a timeout or a backend failure marks the communicator
  // broken before the exception goes on.
  template <typename Work>
  void breaking_on_failure(Work&& work) {
    util::breaking_on_failure(work, [this](const char* what) { mark_broken(what); });
  }

  // The ring pipeline's chunk for host calls: Config::chunk_bytes, or the
  // default when it is 0. Part of every fingerprint (ranks cutting a ring
  // differently would mismatch messages).
  std::size_t host_chunk_bytes() const;
  // refuse(): unless there is nobody to tell, takes the call's number and
  // checks `as_passed()` (built after the number is taken) marked invalid.
  [[noreturn]] void refuse_numbered(const InvalidArgument& error,
                                    const std::function<plan::Fingerprint()>& as_passed, double timeout_seconds,
                                    std::string_view collective);
  // The check of a refused call whose number is taken: throws `error`, or
  // InvalidArgument saying the other ranks raise Mismatch.
  [[noreturn]] void refuse_in_call(const InvalidArgument& error, plan::Fingerprint as_passed,
                                   const util::Deadline& deadline, std::string_view collective);
  // The call check alone (every rank; throws Mismatch).
  void verify(const plan::Fingerprint& mine, const util::Deadline& deadline, std::string_view collective);
  // After a DeadlineExceeded: asks every rank where it is
  // (missing_ranks_error), breaks the communicator with the answer, and
  // throws DeadlineExceeded naming the ranks that did not arrive.
  [[noreturn]] void blame_missing_ranks(const util::Deadline& deadline);
  // Whether this thread may call MPI (the progress thread only under
  // MPI_THREAD_MULTIPLE): the roll call's answers and questions need it.
  bool mpi_here() const { return mpi_any_thread_ || !RequestQueue::on_progress_thread(); }
  // thread_may_run for host memory: `bytes` large enough to be worth
  // handing over, and every plan the call makes over the node's shared
  // memory (or MPI callable from any thread).
  bool thread_may_run_host(std::size_t bytes, const std::function<bool()>& every_plan_shared_memory) const;
  // The roll call this thread may use while waiting (null where it may not call MPI).
  exec::RollCall* answering() const { return mpi_here() ? roll_call_.get() : nullptr; }
  // `check`: run the call check first (false for a batch's packs: the batch
  // was checked once).
  void run_host(const Call& call, const util::Deadline& deadline, bool check);
  void run_gpu(const Call& call, const util::Deadline& deadline);
  void run_batch_host(const BatchCall& call, const util::Deadline& deadline);
  void run_batch_gpu(const BatchCall& call, const util::Deadline& deadline);
  std::size_t bytes_per_pack(const BatchCall& call) const;
  void log_batch_plan(const BatchCall& call);

  // The GPU backend (GpuRuntime::backend), once the communicator is usable.
  gpu::Backend& gpu_backend();
  // What a CUDA call's execution needs (the backend must exist).
  exec::GpuContext gpu_context() { return gpu_.context(split_, rank_, size_); }

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
  Config config_;
  PlanCache plans_;            // the spec, the layout, the last shape's choice (from construction)
  util::Workspace workspace_;  // algorithm scratch
  util::Workspace staging_;    // pack staging (batches and per-replica calls)
  std::uint64_t sequence_ = 0;
  Health health_;              // usable, or what broke it
  topo::NodeSplit split_;      // nodes, from construction
  Topology topology_;          // from construction, after split
  // Over split_.node when it has more than one rank, from construction: its
  // creation is collective and unbounded, so it must not happen inside a
  // call that has a deadline.
  std::unique_ptr<host::ShmSegment> segment_;
  GpuRuntime gpu_;             // devices, the control plane, the backend made by the first CUDA call
  std::unique_ptr<exec::RollCall> roll_call_;  // null on a communicator of one rank
  util::Arena landing_;         // receives into callers' buffers land here first when a call has a timeout
  bool check_calls_ = true;     // Config::check_calls and STRATA_CHECK, and more than one rank
  Fingerprints fingerprints_;   // what the call check compares (over plans_, from construction)
  plan::CallInfo current_;      // the call in progress, for timeout messages
  exec::HostContext host_context_;  // what host collectives run over (fixed at construction)
  std::uint64_t last_logged_batch_ = 0;  // shape of the batch whose plan INFO printed last
  bool mpi_any_thread_ = false;  // MPI_THREAD_MULTIPLE: the progress thread may call MPI
  // Last, so that it goes first: its shut-down runs what is still queued
  // while everything above still exists.
  RequestQueue requests_;
};

// The Session of a Communicator: the one door for lib/api's facades.
Session& session_of(Communicator& comm);

}  // namespace strata::api
