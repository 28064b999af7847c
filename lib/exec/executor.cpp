// Executor: one call through plan -> execute -> finish, host or CUDA, the
// call check where it runs, and what a timeout or a failure leaves behind.
#include "exec/executor.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "exec/integrity.hpp"
#include "exec/registry.hpp"
#include "exec/through_host.hpp"
#include "plan/collective.hpp"
#include "exec/verify.hpp"
#include "gpu/plugin.hpp"
#include "host/reduce_simd.hpp"
#include "util/abandoned.hpp"
#include "util/breaking.hpp"
#include "util/log.hpp"
#include "util/thread_role.hpp"
#include "util/where.hpp"

namespace strata::exec {
namespace {

// The smallest request the progress thread takes: handing one over (waking
// the thread, waking the caller) cost about 10 us per request on the
// development VM (osu_iallreduce through the interposer, 2 ranks), more
// than a 2-rank all-reduce up to 16 KiB takes; smaller requests run on the
// caller's thread in test()/wait() (docs/REQUESTS.md).
constexpr std::size_t kProgressThreadMinBytes = 64 * 1024;

// The deadline of a refused call: its own timeout when that one is valid.
double usable_timeout(double seconds) { return std::isfinite(seconds) && seconds >= 0 ? std::min(seconds, 1e9) : 0; }

}  // namespace

void Executor::start(ExecutorSetup setup) {
  comm_ = setup.comm;
  rank_ = setup.rank;
  size_ = setup.size;
  split_ = setup.split;
  mpi_any_thread_ = setup.mpi_any_thread;
  verifies_ = setup.verifies && size_ > 1;  // one rank: nothing in transit
  sequence_ = setup.sequence;
  plans_ = std::move(setup.plans);
  host_.start(comm_, rank_, size_, *split_, setup.chunk_bytes, setup.numerics);
  gpu_ = GpuRuntime(std::move(setup.gpu_rows), std::move(setup.gpu_plane));
  if (size_ > 1) roll_call_ = std::make_unique<RollCall>(comm_, sequence_);
  static bool logged = false;  // once per process, like the kernel choice itself
  if (rank_ == 0 && !logged) {
    logged = true;
    util::log(util::LogLevel::info, "host reductions run the {} kernel", host::simd::chosen().name);
    if (!host::simd::unheeded().empty()) util::log(util::LogLevel::warn, "{}", host::simd::unheeded());
  }
}

void Executor::reset() noexcept {
  if (health_.broken()) keep_communicators();
  flights_.reset();  // (the watcher stops; the backend's teardown settles what is still queued)
  gpu_.reset();      // the levels, then the backend
  roll_call_.reset();
  host_.reset();
}

void Executor::keep_communicators() noexcept {
  util::abandoned_operations_on(comm_);
  if (split_) {
    util::abandoned_operations_on(split_->node);
    util::abandoned_operations_on(split_->cross);
  }
  if (roll_call_) roll_call_->keep_communicator();
}

bool Executor::mpi_here() const { return mpi_any_thread_ || !util::on_progress_thread(); }

void Executor::mark_broken(const char* reason) {
  health_.break_with(reason);
  host_.abandon();  // operations given up on may still touch these buffers
}

void Executor::blame_missing_ranks(const util::Deadline& deadline) {
  DeadlineExceeded error = missing_ranks_error(
      answering(), current_, rank_, size_, deadline,
      "the call ran on the progress thread, which may not call MPI at this MPI thread level to ask them "
      "(MPI_THREAD_MULTIPLE lets it)");
  health_.break_with(error.what());
  throw error;
}

void Executor::verify_in_call(const plan::Fingerprint& mine, const util::Deadline& deadline,
                              std::string_view collective) {
  current_ = {collective, mine.sequence, 0, "call check"};  // what a timeout in the check names
  breaking_on_failure([&] { verify_call(host_.context(), mine, deadline, current_); });
}

void Executor::verify(const plan::Fingerprint& mine, double timeout_seconds, std::string_view collective) {
  const util::Deadline deadline(usable_timeout(timeout_seconds));
  util::IdleWorkScope answering_scope(answering());
  try {
    verify_in_call(mine, deadline, collective);
  } catch (const DeadlineExceeded&) {
    blame_missing_ranks(deadline);
  }
}

std::shared_ptr<Flight> Executor::run(const Call& call, const Ticket& ticket) {
  // Host calls check inside their plan (it rides in the first shared-memory
  // round where it can); CUDA calls first.
  const bool cuda = call.memory == Memory::cuda;
  return framed(call.options->timeout_seconds, cuda ? ticket.check : nullptr, to_string(call.collective),
                [&](const util::Deadline& deadline) -> std::shared_ptr<Flight> {
                  if (cuda) return run_gpu(call, ticket, deadline);
                  run_host(call, ticket, deadline);
                  return nullptr;
                });
}

void Executor::run_host(const Call& call, const Ticket& ticket, const util::Deadline& deadline) {
  const std::string_view collective_name = call.name.empty() ? to_string(call.collective) : call.name;
  if (call.job.count == 0) {  // still collective: the ranks must agree that it is
    if (ticket.check) verify_in_call(*ticket.check, deadline, collective_name);
    return;
  }
  const std::size_t bytes = call.bytes();
  const plan::Choice& choice =
      plans_.cached(call.collective, bytes, Memory::host, call.options->implementation, call.spec, call.reduction());
  plan::Job job = call.job;  // mean stays: exec runs sum and finishes
  job.shards = choice.shards;
  job.chunk_bytes = host_.chunk_bytes();
  const plan::CallInfo info{collective_name, ticket.sequence, bytes, plans_.described()};
  current_ = info;
  util::log(util::LogLevel::trace, "{} #{}: {} bytes with {}", collective_name, ticket.sequence, bytes,
            plans_.described());
  breaking_on_failure([&] {
    if (!verifies_) {
      exec::run_host(call.collective, choice, job, call.contributors, host_.context(), deadline, info, ticket.check);
      return;
    }
    const IntegrityCheck integrity(call.collective, job, call.contributors, rank_, size_, integrity_copy_);
    exec::run_host(call.collective, choice, job, call.contributors, host_.context(), deadline, info, ticket.check);
    integrity.confirm(host_.context(), deadline, info);
  });
}

gpu::Backend& Executor::gpu_backend() {
  health_.ensure_usable();
  // strata's own thread must never break a graph the application captures
  // on another thread meanwhile.
  if (util::on_progress_thread()) gpu::relax_capture_checks();
  gpu::Backend& backend = gpu_.backend(comm_, *split_, rank_);
  if (!flights_)
    flights_ = std::make_unique<Flights>(
        backend,
        [this](std::exception_ptr error, const std::string& reason) {
          // Found after its call returned: no call is there to raise it.
          if (gpu::Backend* made = gpu_.made()) made->mark_broken(reason);
          health_.report(error, reason, /*breaks=*/true);
        },
        [this](RollCall* roll_call, const Flight& flight) { return blame_flight(roll_call, flight); },
        roll_call_.get(), mpi_any_thread_);
  return backend;
}

DeadlineExceeded Executor::blame_flight(RollCall* roll_call, const Flight& flight) {
  return missing_ranks_error(roll_call, flight.info(), rank_, size_, flight.deadline,
                             "the timeout was found after the stream-ordered call returned, by a thread that may not "
                             "call MPI at this MPI thread level to ask the ranks (MPI_THREAD_MULTIPLE lets it)");
}

gpu::Capture Executor::capture_now(void* stream) {
  capture_seen_ = {stream, std::this_thread::get_id(), gpu::capture_status(stream), true};
  return capture_seen_.status;
}

gpu::Capture Executor::capture_of(void* stream) {
  CaptureSeen& seen = capture_seen_;
  if (seen.valid && seen.stream == stream && seen.thread == std::this_thread::get_id()) {
    seen.valid = false;
    return seen.status;
  }
  return gpu::capture_status(stream);
}

gpu::Mode Executor::mode_of(void* stream, bool request, const Ordering* ordering, bool host_stages) {
  if (ordering && ordering->gate.valid()) return gpu::Mode::blocking;  // handed over: its caller's stream is held
  if (!stream && !request) return gpu::Mode::blocking;                 // MPI's semantics
  if (stream && capture_of(stream) == gpu::Capture::active) return gpu::Mode::captured;
  // Host stages run where the call runs, waiting for the device between
  // them: on this thread, blocking.
  return host_stages ? gpu::Mode::blocking : gpu::Mode::ordered;
}

plan::Choice Executor::gpu_choice(const Call& call) const {
  // A call through host memory (exec/through_host.hpp) runs the host plan.
  const Memory plan_memory = through_host(call) ? Memory::host : Memory::cuda;
  return plans_.choose(call.collective, call.bytes(), plan_memory, call.options->implementation, call.spec,
                       call.reduction());
}

bool Executor::through_host(const Call& call) const {
  return needs_host_numerics(host_.context().numerics, call.collective, call.job.dtype, call.job.op);
}

gpu::CallContext Executor::gpu_call(const util::Deadline& deadline, void* stream, std::vector<int> devices,
                                    bool packed, gpu::Mode mode, const Ordering* ordering) const {
  gpu::CallContext context;
  context.deadline = &deadline;
  context.info = current_;
  context.producer = stream;
  context.devices = std::move(devices);
  context.packed = packed;
  context.mode = mode;
  if (ordering) context.ready = ordering->ready;
  return context;
}

std::shared_ptr<Flight> Executor::run_gpu(const Call& call, const Ticket& ticket, const util::Deadline& deadline) {
  gpu_backend();  // collective the first time: before the count-0 return, which every rank takes alike
  if (call.job.count == 0) return nullptr;
  const std::size_t bytes = call.bytes();
  const bool staged = through_host(call);
  const plan::Choice& choice = plans_.cached(call.collective, bytes, staged ? Memory::host : Memory::cuda,
                                             call.options->implementation, call.spec, call.reduction());
  current_ = {to_string(call.collective), ticket.sequence, bytes, plans_.described()};
  plan::Job job = call.job;  // mean stays: exec runs sum and finishes
  job.shards = choice.shards;
  job.chunk_bytes = host_.chunk_bytes();  // staging takes at least its own chunk (gpu/staged.cpp)
  const gpu::Mode mode = mode_of(call.options->stream, call.request, call.ordering, host_stages(choice));
  util::log(util::LogLevel::trace, "{} #{} (cuda): {} bytes with {}", current_.collective, current_.sequence, bytes,
            plans_.described());
  const gpu::CallContext context = gpu_call(deadline, call.options->stream, {call.device}, false, mode, call.ordering);
  gpu::Fence done;
  breaking_on_failure([&] {
    if (staged)
      run_gpu_through_host(call.collective, choice, job, call.contributors, host_.context(), *gpu_context().backend,
                           context);
    else
      done = exec::run_gpu(call.collective, choice, job, call.contributors, gpu_context(), context);
  });
  return done.valid() ? flights_->add(done, deadline, current_) : nullptr;
}

std::optional<InvalidArgument> Executor::refusal(const Call& call) {
  if (call.memory != Memory::cuda) return std::nullopt;
  void* stream = call.options->stream;
  const gpu::Capture capture = capture_now(stream);
  if (auto refused = host_wait_in_capture(stream, capture, "call")) return refused;
  if (!stream || capture != gpu::Capture::active || call.job.count == 0) return std::nullopt;
  if (call.request)
    return InvalidArgument(util::located(
        "a request (a non-blocking or persistent call) cannot be captured into a CUDA graph: its test() and "
        "wait() are host waits; use the blocking form with CommunicationOptions::stream, which is captured"));
  if (through_host(call))
    return InvalidArgument(util::located(through_host_refusal()));
  if (const std::string why = capture_refusal({gpu_choice(call)}); !why.empty())
    return InvalidArgument(util::located(why));
  return std::nullopt;
}

std::string Executor::through_host_refusal() const {
  return "reproducible mode exact and 16-bit sums accumulated in f32 run a call on CUDA tensors through host memory "
         "(docs/REPRODUCIBILITY.md), which a CUDA graph cannot hold, so this call cannot be captured: make it outside "
         "the capture";
}

std::optional<InvalidArgument> Executor::host_wait_in_capture(void* stream, gpu::Capture capture,
                                                              std::string_view what) {
  if (stream || capture != gpu::Capture::implicit) return std::nullopt;
  return InvalidArgument(util::located(fmt::format(
      "a {0} on CUDA tensors without CommunicationOptions::stream waits on the host for its result, but a "
      "blocking stream of this device is capturing a CUDA graph, which such a wait would break: pass the "
      "capturing stream (the {0} is then captured), or make the call outside the capture",
      what)));
}

std::string Executor::capture_refusal(const std::vector<plan::Choice>& choices) const {
  for (const plan::Choice& choice : choices) {
    if (host_stages(choice))
      return fmt::format(
          "the plan {} has host stages (MPI through pinned host memory), which a CUDA graph cannot hold, so this "
          "call cannot be captured: use a spec whose levels are NCCL (nccl, or nccl/nccl across nodes), or make "
          "the call outside the capture",
          choice.describe());
    if (!gpu_.ready_for(choice, *split_))
      return fmt::format(
          "the first call with the plan {} creates its GPU backend and NCCL communicators, which cannot happen "
          "inside a CUDA graph capture: make the same call once before capturing (a warm-up, as NCCL and PyTorch "
          "ask too)",
          choice.describe());
  }
  return "";
}

bool Executor::only_enqueues(const Call& call) const {
  return call.memory == Memory::cuda && !host_stages(gpu_choice(call));
}

bool Executor::hands_over(const Call& call) {
  if (call.memory != Memory::cuda || !call.options->stream || call.job.count == 0) return false;
  return mpi_any_thread_ && gpu_.made() && host_stages(gpu_choice(call));
}

Ordering Executor::order_now(const Call& call, bool gate) {
  Ordering ordering;
  gpu::Backend* backend = gpu_.made();
  if (!backend || call.memory != Memory::cuda) return ordering;
  const int device = call.device >= 0 ? call.device : gpu_row().device;
  ordering.ready.push_back(backend->mark(call.options->stream, device));
  if (gate) ordering.gate = backend->hold(call.options->stream);
  return ordering;
}

void Executor::settle(const Ordering& ordering) noexcept {
  gpu::Backend* backend = gpu_.made();
  if (!backend) return;
  for (const gpu::Fence fence : ordering.ready) backend->release(fence);
  backend->open_gate(ordering.gate);
}

void Executor::report(std::exception_ptr error) {
  try {
    std::rethrow_exception(error);
  } catch (const DeadlineExceeded& e) {
    health_.report(error, e.what(), /*breaks=*/true);
  } catch (const BackendError& e) {
    health_.report(error, e.what(), /*breaks=*/true);
  } catch (const PeerFailure&) {
    health_.report(error, "", /*breaks=*/false);  // (broken already: it says by what)
  } catch (const std::exception& e) {
    health_.report(error, e.what(), /*breaks=*/false);
  }
}

void Executor::check() {
  if (flights_) flights_->look(answering());
  health_.ensure_usable();
}

bool Executor::landed(Flight& flight) { return flights_->landed(flight, answering()); }

void Executor::wait(Flight& flight) {
  util::IdleWorkScope answering_scope(answering());
  flights_->wait(flight, answering());
}

bool Executor::thread_may_run(const Call& call) const {
  if (call.memory != Memory::host) return mpi_any_thread_;  // the GPU backend's setup and host stages use MPI
  if (call.bytes() < kProgressThreadMinBytes) return false;
  bool shared = false;
  try {
    shared =
        plans_.choose(call.collective, call.bytes(), Memory::host, call.options->implementation, call.spec,
                      call.reduction())
            .shared_memory;
  } catch (const Error&) {
    return false;  // (a plan that cannot be made fails when the request runs, on the caller's thread)
  }
  return thread_may_run_host(call.bytes(), shared);
}

bool Executor::thread_may_run_host(std::size_t bytes, bool every_plan_shared_memory) const {
  if (bytes < kProgressThreadMinBytes) return false;
  if (mpi_any_thread_ || size_ == 1) return true;
  // One node: the call check and the shared-memory plans make no MPI call
  // (the integrity check does).
  return !verifies_ && split_->node_count == 1 && host_.has_segment() && every_plan_shared_memory;
}

}  // namespace strata::exec
