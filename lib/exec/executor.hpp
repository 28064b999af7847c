// The execution home of one communicator: it runs every call the api layer
// hands it — host and CUDA memory, single tensors and batches, blocking
// calls and started requests — through the plan, execute and finish
// stages, and decides once whether a call runs on host memory or on the
// GPU. It owns what calls run over: the plans, the host runtime (shared
// memory, scratch), the GPU runtime (devices, control plane, backend,
// levels), the communicator's health and its roll call. The api layer
// validates, numbers, fingerprints and hands over (api::Session).
// Internal header.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "exec/call.hpp"
#include "exec/gpu_runtime.hpp"
#include "exec/health.hpp"
#include "exec/host_runtime.hpp"
#include "exec/plan_cache.hpp"
#include "exec/roll_call.hpp"
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
  const std::uint64_t* sequence = nullptr;  // the api layer's call counter (answers roll calls)
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

  // Throws PeerFailure once the communicator is broken.
  void ensure_usable() const { health_.ensure_usable(); }
  bool broken() const { return health_.broken(); }
  // Communicator::check(): as ensure_usable().
  void check() const { health_.ensure_usable(); }
  // The call in progress (its plan's text once planned), for trace spans.
  const plan::CallInfo& current() const { return current_; }

  // Runs `call` start to finish: with ticket.check, first makes sure every
  // rank makes the same call (Mismatch on every rank, nothing sent); host
  // memory over MPI and shared memory, CUDA memory over the GPU backend. A
  // timeout names the ranks that really did not arrive (a roll call) and,
  // like a backend failure, breaks the communicator. Count 0 is still
  // collective (the check).
  void run(const Call& call, const Ticket& ticket);
  // Runs a batch, checked once as a whole (ticket.check) and then pack by
  // pack under the ticket's number, calling on_pack_done(i) as pack i lands.
  void run_batch(const BatchCall& call, const Ticket& ticket);
  // The call check alone, for a call refused on some rank (api): throws
  // Mismatch on a difference; a timeout breaks the communicator, naming the
  // ranks that did not arrive.
  void verify(const plan::Fingerprint& mine, double timeout_seconds, std::string_view collective);

  // Whether the progress thread may run `call`: host memory, at least
  // 64 KiB (smaller ones cost more to hand over than to run), and running
  // it makes no MPI call (one node over shared memory, or a communicator of
  // one rank) or MPI allows calls from any thread.
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
  bool thread_may_run_host(std::size_t bytes, bool every_plan_shared_memory) const;

  void run_host(const Call& call, const Ticket& ticket, const util::Deadline& deadline);
  void run_gpu(const Call& call, const Ticket& ticket, const util::Deadline& deadline);
  void run_batch_host(const BatchCall& call, const Ticket& ticket, const util::Deadline& deadline);
  void run_batch_gpu(const BatchCall& call, const Ticket& ticket, const util::Deadline& deadline);
  gpu::Backend& gpu_backend();
  GpuContext gpu_context() { return gpu_.context(*split_, rank_, size_); }

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
  const topo::NodeSplit* split_ = nullptr;
  bool mpi_any_thread_ = false;
  const std::uint64_t* sequence_ = nullptr;
  PlanCache plans_;
  Health health_;
  plan::CallInfo current_;  // the call in progress, for timeout messages
  HostRuntime host_;
  GpuRuntime gpu_;
  std::unique_ptr<RollCall> roll_call_;  // null on a communicator of one rank
};

}  // namespace strata::exec
