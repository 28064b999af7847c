// Executor: one call through plan -> execute -> finish, host or CUDA, the
// call check where it runs, and what a timeout or a failure leaves behind.
#include "exec/executor.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "exec/verify.hpp"
#include "host/reduce_simd.hpp"
#include "util/breaking.hpp"
#include "util/log.hpp"
#include "util/thread_role.hpp"

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
  sequence_ = setup.sequence;
  plans_ = std::move(setup.plans);
  host_.start(comm_, rank_, size_, *split_, setup.chunk_bytes);
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
  gpu_.reset();  // the levels, then the backend
  roll_call_.reset();
  host_.reset();
}

bool Executor::mpi_here() const { return mpi_any_thread_ || !util::on_progress_thread(); }

void Executor::mark_broken(const char* reason) {
  health_.break_with(reason);
  host_.abandon();  // operations given up on may still touch these buffers
}

void Executor::blame_missing_ranks(const util::Deadline& deadline) {
  DeadlineExceeded error = missing_ranks_error(answering(), current_, rank_, size_, deadline);
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

void Executor::run(const Call& call, const Ticket& ticket) {
  const util::Deadline deadline(call.options->timeout_seconds);
  util::IdleWorkScope answering_scope(answering());
  try {
    if (call.memory == Memory::cuda) {
      if (ticket.check) verify_in_call(*ticket.check, deadline, to_string(call.collective));
      run_gpu(call, ticket, deadline);
    } else {
      run_host(call, ticket, deadline);
    }
  } catch (const DeadlineExceeded&) {
    blame_missing_ranks(deadline);
  }
  host_.end_call();
}

void Executor::run_host(const Call& call, const Ticket& ticket, const util::Deadline& deadline) {
  const std::string_view collective_name = call.name.empty() ? to_string(call.collective) : call.name;
  if (call.job.count == 0) {  // still collective: the ranks must agree that it is
    if (ticket.check) verify_in_call(*ticket.check, deadline, collective_name);
    return;
  }
  const std::size_t bytes = call.bytes();
  const plan::Choice& choice = plans_.cached(call.collective, bytes, Memory::host, call.options->implementation, call.spec);
  plan::Job job = call.job;  // mean stays: exec runs sum and finishes
  job.shards = choice.shards;
  job.chunk_bytes = host_.chunk_bytes();
  const plan::CallInfo info{collective_name, ticket.sequence, bytes, plans_.described()};
  current_ = info;
  util::log(util::LogLevel::trace, "{} #{}: {} bytes with {}", collective_name, ticket.sequence, bytes,
            plans_.described());
  breaking_on_failure([&] {
    exec::run_host(call.collective, choice, job, call.contributors, host_.context(), deadline, info, ticket.check);
  });
}

gpu::Backend& Executor::gpu_backend() {
  health_.ensure_usable();
  return gpu_.backend(comm_, *split_, rank_);
}

void Executor::run_gpu(const Call& call, const Ticket& ticket, const util::Deadline& deadline) {
  gpu_backend();  // collective the first time: before the count-0 return, which every rank takes alike
  if (call.job.count == 0) return;
  const std::size_t bytes = call.bytes();
  const plan::Choice& choice = plans_.cached(call.collective, bytes, Memory::cuda, call.options->implementation, call.spec);
  current_ = {to_string(call.collective), ticket.sequence, bytes, plans_.described()};
  plan::Job job = call.job;  // mean stays: exec runs sum and finishes
  job.shards = choice.shards;
  job.chunk_bytes = host_.chunk_bytes();  // staging takes at least its own chunk (gpu/staged.cpp)
  util::log(util::LogLevel::trace, "{} #{} (cuda): {} bytes with {}", current_.collective, current_.sequence, bytes,
            plans_.described());
  const gpu::CallContext context{&deadline, current_, call.options->stream, {call.device}};
  breaking_on_failure(
      [&] { exec::run_gpu(call.collective, choice, job, call.contributors, gpu_context(), context); });
}

bool Executor::thread_may_run(const Call& call) const {
  if (call.memory != Memory::host) return false;  // the GPU backend's setup and staging use MPI
  if (call.bytes() < kProgressThreadMinBytes) return false;
  bool shared = false;
  try {
    shared =
        plans_.choose(call.collective, call.bytes(), Memory::host, call.options->implementation, call.spec).shared_memory;
  } catch (const Error&) {
    return false;  // (a plan that cannot be made fails when the request runs, on the caller's thread)
  }
  return thread_may_run_host(call.bytes(), shared);
}

bool Executor::thread_may_run_host(std::size_t bytes, bool every_plan_shared_memory) const {
  if (bytes < kProgressThreadMinBytes) return false;
  if (mpi_any_thread_ || size_ == 1) return true;
  // One node: the call check and the shared-memory plans make no MPI call.
  return split_->node_count == 1 && host_.has_segment() && every_plan_shared_memory;
}

}  // namespace strata::exec
