// The execution home of one communicator: it runs every call the api layer
// hands it — host and CUDA memory, single tensors and batches, blocking
// calls, stream-ordered calls and started requests — through the plan,
// execute and finish stages, and decides once whether a call runs on host
// memory or on the GPU, and how a CUDA call relates to its caller:
//   blocking   no stream given: returns with the result in place (MPI's
//              semantics);
//   ordered    a stream given (or a CUDA request): enqueued after the
//              stream's work, the stream waits for it, and the call returns
//              at once, leaving a Flight (exec/flights.hpp) whose failure
//              is raised later;
//   captured   the stream captures a CUDA graph: the work goes into it.
// A stream-ordered call whose plan has host stages (MPI through pinned
// memory) cannot be enqueued: where MPI allows any thread it is handed to
// the progress thread (api), its caller's stream held at a gate until it
// ran; elsewhere it runs blocking on the caller's thread.
// It owns what calls run over: the plans, the host runtime (shared memory,
// scratch), the GPU runtime (devices, control plane, backend, levels, the
// flights), the communicator's health and its roll call. The api layer
// validates, numbers, fingerprints and hands over (api::Session).
// Internal header.
#pragma once

#include <mpi.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <thread>
#include <string_view>
#include <vector>

#include "exec/call.hpp"
#include "exec/flights.hpp"
#include "exec/gpu_runtime.hpp"
#include "exec/health.hpp"
#include "exec/host_runtime.hpp"
#include "exec/plan_cache.hpp"
#include "exec/roll_call.hpp"
#include "gpu/plugin.hpp"
#include "plan/fingerprint.hpp"
#include "plan/job.hpp"
#include "topo/gpu_plane.hpp"
#include "topo/node_split.hpp"
#include "util/breaking.hpp"
#include "util/deadline.hpp"

namespace strata::exec {

// What the api layer gives with each call: the number it took and the
// fingerprint every rank must match before data moves (null: unchecked —
// the check is off, or the communicator has one rank).
struct Ticket {
  std::uint64_t sequence = 0;
  const plan::Fingerprint* check = nullptr;
};

// What an Executor is made from (the communicator's construction).
struct ExecutorSetup {
  MPI_Comm comm = MPI_COMM_NULL;  // the communicator's private duplicate
  int rank = 0;
  int size = 1;
  const topo::NodeSplit* split = nullptr;  // outlives the executor
  PlanCache plans;
  std::vector<topo::GpuRow> gpu_rows;  // every rank's, from topology discovery
  topo::GpuPlane gpu_plane;            // decided from gpu_rows (its verdicts are in plans' layout)
  std::size_t chunk_bytes = 0;         // Config::chunk_bytes (0: default)
  bool mpi_any_thread = false;         // MPI_THREAD_MULTIPLE
  plan::Numerics numerics;             // Config::reproducible, Config::accumulate_f32 (agreed)
  bool verifies = false;               // Config::verify (agreed): host calls end with the integrity check
  const std::atomic<std::uint64_t>* sequence = nullptr;  // the api layer's call counter (answers roll calls)
};

class Executor {
 public:
  Executor() = default;
  // Makes it ready to run calls, once. Collective over setup.comm: maps the
  // node's shared memory and makes the roll call's communicator (several
  // ranks).
  void start(ExecutorSetup setup);
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  const PlanCache& plans() const { return plans_; }
  // The ring pipeline's chunk for host calls (part of every fingerprint).
  std::size_t chunk_bytes() const { return host_.chunk_bytes(); }
  // The GPU control plane's verdicts (identical on every rank), and this
  // rank's row of its table (the device it drives, the devices it sees).
  const topo::GpuPlane& gpu_plane() const { return gpu_.plane(); }
  const topo::GpuRow& gpu_row() const { return gpu_.row(rank_); }

  // Throws, once, the error of a failure found after its call returned
  // (Health::report); then PeerFailure once the communicator is broken.
  void ensure_usable() { health_.ensure_usable(); }
  bool broken() const { return health_.broken(); }
  // Communicator::check(): one look at the work in flight (which may find
  // a failure, asking the roll call where this thread may), then as
  // ensure_usable(). Never waits for the GPU.
  void check();
  // The call in progress (its plan's text once planned), for trace spans.
  const plan::CallInfo& current() const { return current_; }

  // Runs `call`: with ticket.check, first makes sure every rank makes the
  // same call (Mismatch on every rank, nothing sent or enqueued); host
  // memory over MPI and shared memory, CUDA memory over the GPU backend in
  // the mode the header describes. A timeout names the ranks that really
  // did not arrive (a roll call) and, like a backend failure, breaks the
  // communicator. Count 0 is still collective (the check). Returns the
  // flight of an ordered call (null when the call is done). With the
  // integrity check (ExecutorSetup::verifies) a host call ends with it:
  // Corrupted on every rank, the communicator still usable.
  std::shared_ptr<Flight> run(const Call& call, const Ticket& ticket);
  // Runs a batch, checked once as a whole (ticket.check) and then pack by
  // pack under the ticket's number, calling on_pack_done(i) as pack i lands
  // (ordered: as its work is enqueued). Returns the last pack's flight of
  // an ordered batch (it lands last).
  std::shared_ptr<Flight> run_batch(const BatchCall& call, const Ticket& ticket);

  // Why `call` cannot run as asked, before it takes a number (nothing when
  // it can): a CUDA call on a stream that captures a CUDA graph, where the
  // plan has host stages, the call is a request, or its backend or NCCL
  // communicators do not exist yet; a call without a stream while the
  // device's legacy default stream is in a capture. The api layer refuses
  // it as invalid arguments (collectively).
  std::optional<InvalidArgument> refusal(const Call& call);
  std::optional<InvalidArgument> refusal(const BatchCall& call);

  // Whether a CUDA call's plan (every pack's, for a batch) only enqueues
  // device work, with no host stages: a request of it runs at its start.
  // False on host memory.
  bool only_enqueues(const Call& call) const;
  bool only_enqueues(const BatchCall& call) const;

  // Whether a stream-ordered CUDA call goes to the progress thread: its
  // plan has host stages, MPI allows any thread, and the GPU backend exists.
  bool hands_over(const Call& call);
  bool hands_over(const BatchCall& call);
  // Where `call`'s producer is now (a CUDA request's start, a handed-over
  // call), and with `gate` the caller's stream held until settle() (a
  // handed-over call). Empty where the GPU backend does not exist yet.
  Ordering order_now(const Call& call, bool gate);
  Ordering order_now(const BatchCall& call, bool gate);
  // After the run of a call ordered so: gives the fences back and opens the
  // gate. Never throws.
  void settle(const Ordering& ordering) noexcept;
  // A failure of a handed-over call (no caller to raise it): the next call
  // and check() raise it once; a timeout or backend failure also breaks the
  // communicator.
  void report(std::exception_ptr error);

  // A CUDA request's flight: whether it landed (after one look), and until
  // it landed; both throw the failure it was caught in.
  bool landed(Flight& flight);
  void wait(Flight& flight);
  // The call check alone, for a call refused on some rank (api): throws
  // Mismatch on a difference; a timeout breaks the communicator, naming the
  // ranks that did not arrive.
  void verify(const plan::Fingerprint& mine, double timeout_seconds, std::string_view collective);

  // Whether the progress thread may run `call`: host memory, at least
  // 64 KiB (smaller ones cost more to hand over than to run), and running
  // it makes no MPI call (one node over shared memory without the
  // integrity check, or a communicator of one rank) or MPI allows calls
  // from any thread; CUDA memory where MPI
  // allows calls from any thread (its setup and host stages use MPI).
  bool thread_may_run(const Call& call) const;
  bool thread_may_run(const BatchCall& call) const;

  // The automatic pack size of a batch (its options' when set).
  std::size_t bytes_per_pack(const BatchCall& call) const;

  // Before the communicator goes: the GPU's levels and backend, then the
  // roll call and the shared memory. Never throws.
  void reset() noexcept;

 private:
  // A call whose deadline passed: asks every rank where it is, breaks the
  // communicator with the answer and throws DeadlineExceeded naming the
  // ranks that did not arrive.
  [[noreturn]] void blame_missing_ranks(const util::Deadline& deadline);
  // Breaks the communicator and abandons the buffers work given up on may
  // still touch.
  void mark_broken(const char* reason);
  // A broken communicator's calls were given up on, on this rank and maybe
  // on others: messages of those calls may still arrive for any of its MPI
  // communicators (the duplicate, the node and cross-node groups, the roll
  // call's), long after. Freed, MPI could give a later communicator the
  // same context and match them there (MPICH does: a fresh communicator's
  // all-reduce read a stale slice), so they are kept (util/abandoned.hpp).
  void keep_communicators() noexcept;
  template <typename Work>
  void breaking_on_failure(Work&& work) {
    util::breaking_on_failure(work, [this](const char* what) { mark_broken(what); });
  }
  // Whether this thread may call MPI (the progress thread only under
  // MPI_THREAD_MULTIPLE): the roll call's answers and questions need it.
  bool mpi_here() const;
  // The roll call this thread may use while waiting (null where it may not call MPI).
  RollCall* answering() const { return mpi_here() ? roll_call_.get() : nullptr; }
  void verify_in_call(const plan::Fingerprint& mine, const util::Deadline& deadline, std::string_view collective);
  // One call's frame around `work(deadline)`: its deadline, the roll call
  // answered while it waits, the call check first where `check` (before
  // anything is sent or enqueued: NCCL hangs on a mismatched call), a
  // timeout blamed on the ranks that did not arrive, the landing arena
  // emptied after. Returns what `work` returns (a flight, or null).
  template <typename Work>
  std::shared_ptr<Flight> framed(double timeout_seconds, const plan::Fingerprint* check, std::string_view collective,
                                 Work&& work) {
    const util::Deadline deadline(timeout_seconds);
    util::IdleWorkScope answering_scope(answering());
    std::shared_ptr<Flight> flight;
    try {
      if (check) verify_in_call(*check, deadline, collective);
      flight = work(deadline);
    } catch (const DeadlineExceeded&) {
      blame_missing_ranks(deadline);
    }
    host_.end_call();
    return flight;
  }
  bool thread_may_run_host(std::size_t bytes, bool every_plan_shared_memory) const;

  void run_host(const Call& call, const Ticket& ticket, const util::Deadline& deadline);
  std::shared_ptr<Flight> run_gpu(const Call& call, const Ticket& ticket, const util::Deadline& deadline);
  // Returns how many packs ran (each called on_pack_done).
  std::size_t run_batch_host(const BatchCall& call, const Ticket& ticket, const util::Deadline& deadline);
  std::shared_ptr<Flight> run_batch_gpu(const BatchCall& call, const Ticket& ticket, const util::Deadline& deadline);
  // The GPU backend, created the first time (collective), with the flights
  // over it.
  gpu::Backend& gpu_backend();
  GpuContext gpu_context() { return gpu_.context(*split_, rank_, size_); }
  // How a CUDA call whose plan is `choice` (every pack's, for a batch:
  // `host_stages` if any has them) relates to its caller.
  gpu::Mode mode_of(void* stream, bool request, const Ordering* ordering, bool host_stages);
  // The plan of a CUDA call (by its bytes) or of each pack of a CUDA batch:
  // the host plan for a call through host memory.
  plan::Choice gpu_choice(const Call& call) const;
  // Whether a CUDA call (a batch: any of its tensors) runs through host
  // memory: its reduction's numerics exist on host memory only
  // (exec/through_host.hpp).
  bool through_host(const Call& call) const;
  bool through_host(const BatchCall& call) const;
  // A CUDA batch through host memory: every tensor copied to host memory,
  // the batch run there as a host batch (its packs and transforms), the
  // results copied back where they land, then on_pack_done for every pack
  // in order. (run_batch_gpu takes this path for one replica per rank;
  // more raise Unavailable.)
  void run_batch_gpu_through_host(const BatchCall& call, const Ticket& ticket, const util::Deadline& deadline);
  std::vector<plan::Choice> gpu_choices(const BatchCall& call) const;
  // Why a captured call with these plans cannot be captured ("" if it can).
  std::string capture_refusal(const std::vector<plan::Choice>& choices) const;
  // Why a captured call through host memory cannot be captured.
  std::string through_host_refusal() const;
  // The refusal of a CUDA `what` ("call", "batch") without a stream, which
  // waits on the host, while a blocking stream of this device is capturing
  // (`capture`, of `stream`); nullopt where that is not so.
  static std::optional<InvalidArgument> host_wait_in_capture(void* stream, gpu::Capture capture,
                                                             std::string_view what);
  // The CallContext of a CUDA call in `mode`.
  gpu::CallContext gpu_call(const util::Deadline& deadline, void* stream, std::vector<int> devices, bool packed,
                            gpu::Mode mode, const Ordering* ordering) const;
  // A timeout of stream-ordered work found after its call returned.
  DeadlineExceeded blame_flight(RollCall* roll_call, const Flight& flight);
  // The capture status of `stream`, asked once per call: refusal() asks
  // (capture_now) and the run that follows on the same thread takes its
  // answer (capture_of, which asks itself where there is none).
  gpu::Capture capture_now(void* stream);
  gpu::Capture capture_of(void* stream);

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
  const topo::NodeSplit* split_ = nullptr;
  bool mpi_any_thread_ = false;
  bool verifies_ = false;                 // the integrity check after each host call (exec/integrity.hpp)
  std::vector<std::byte> integrity_copy_;  // its copy of an in-place min/max input
  const std::atomic<std::uint64_t>* sequence_ = nullptr;
  PlanCache plans_;
  Health health_;
  plan::CallInfo current_;  // the call in progress, for timeout messages
  HostRuntime host_;
  GpuRuntime gpu_;
  std::unique_ptr<RollCall> roll_call_;  // null on a communicator of one rank
  std::unique_ptr<Flights> flights_;     // over gpu_'s backend, once it exists
  struct CaptureSeen {
    void* stream = nullptr;
    std::thread::id thread;
    gpu::Capture status = gpu::Capture::none;
    bool valid = false;
  } capture_seen_;  // refusal()'s answer, for the run that follows it
};

}  // namespace strata::exec
