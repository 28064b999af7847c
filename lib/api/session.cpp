// Session: construction (duplicate, nodes, topology, shared memory, its
// parts), one collective through plan -> execute -> finish, the call
// numbering and refusal protocol, and the broken state.
#include "api/session.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string_view>

#include "api/model_auto.hpp"
#include "api/validate.hpp"
#include "exec/execute.hpp"
#include "exec/node_segment.hpp"
#include "exec/registry.hpp"
#include "exec/verify.hpp"
#include "gpu/plugin.hpp"
#include "host/reduce_simd.hpp"
#include "topo/discover.hpp"
#include "topo/placement.hpp"
#include "util/breaking.hpp"
#include "util/check.hpp"
#include "util/log.hpp"
#include "util/trace.hpp"
#include "util/where.hpp"

namespace strata::api {
namespace {

// Pipeline granularity of the chunked algorithms when Config leaves it 0.
constexpr std::size_t kDefaultChunkBytes = 256 * 1024;

// The smallest request the progress thread takes: handing one over (waking
// the thread, waking the caller) cost about 10 us per request on the
// development VM (osu_iallreduce through the interposer, 2 ranks), more
// than a 2-rank all-reduce up to 16 KiB takes; smaller requests run on the
// caller's thread in test()/wait() (docs/REQUESTS.md).
constexpr std::size_t kProgressThreadMinBytes = 64 * 1024;

// Config::progress_thread, or STRATA_PROGRESS_THREAD=1 (anything else but
// unset, empty or 0 is refused: a typo must not silently mean "off").
bool progress_thread_wanted(const Config& config) {
  const char* env = std::getenv("STRATA_PROGRESS_THREAD");
  if (!env || !*env || std::string_view(env) == "0") return config.progress_thread;
  if (std::string_view(env) == "1") return true;
  throw InvalidArgument(util::located(
      fmt::format("STRATA_PROGRESS_THREAD = '{}' must be 1 (a progress thread) or 0 (none)", env)));
}

}  // namespace

Session::Session(MPI_Comm comm, Config config) {
  int initialized = 0;
  STRATA_CHECK_MPI(MPI_Initialized(&initialized));
  if (!initialized)
    throw InvalidArgument(util::located("strata::Communicator needs MPI: call MPI_Init before constructing it"));
  if (comm == MPI_COMM_NULL) throw InvalidArgument(util::located("comm = MPI_COMM_NULL: pass a valid communicator"));
  // Check the config before the collective dup: a bad one must not leave
  // other ranks inside MPI_Comm_dup. (Ranks share config and environment in
  // practice, so all of them throw.)
  validate_config(config);
  const bool progress_thread = progress_thread_wanted(config);
  plan::Spec spec = plan::resolve_spec(config.all_reduce_spec, exec::catalogue());
  const bool model_wanted = model_auto_wanted(spec);
  check_calls_ = call_check_wanted(config);
  config_ = std::move(config);
  STRATA_CHECK_MPI(MPI_Comm_dup(comm, &comm_));
  // From here on a failure must free what was made: the destructor does not
  // run for a constructor that throws.
  try {
    STRATA_CHECK_MPI(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
    STRATA_CHECK_MPI(MPI_Comm_rank(comm_, &rank_));
    STRATA_CHECK_MPI(MPI_Comm_size(comm_, &size_));
    const Agreed agreed = agree_on_call_check(comm_, size_, check_calls_, model_wanted);
    if (util::trace::enabled()) [[unlikely]] {
      util::trace::start();
      if (agreed.every_rank_traces) util::trace::align_clocks(comm_, rank_, size_);
      else if (rank_ == 0)
        util::log(util::LogLevel::warn, "STRATA_TRACE is set on some ranks only: trace clocks stay unaligned");
    }
    check_calls_ = check_calls_ && size_ > 1;  // one rank has nobody to disagree with
    int thread_level = MPI_THREAD_SINGLE;
    STRATA_CHECK_MPI(MPI_Query_thread(&thread_level));
    mpi_any_thread_ = thread_level == MPI_THREAD_MULTIPLE;
    split_ = topo::split_nodes(comm_);
    std::vector<topo::GpuRow> gpu_rows;
    topology_ = topo::discover(comm_, split_, gpu::probe_devices(), &gpu_rows);
    gpu_ = GpuRuntime(std::move(gpu_rows), split_.min_local_size);
    plan::Layout layout{.node_count = split_.node_count, .local_size = split_.local_size};
    gpu_.plane().apply_to(layout);
    if (agreed.every_rank_models)
      layout.modelled_all_reduce = modelled_all_reduce(
          comm_, rank_, topology_, plan::default_spec(Collective::all_reduce, Memory::host, layout));
    plans_ = PlanCache(std::move(spec), layout);  // (nothing cached yet: moving it is safe)
    fingerprints_ = Fingerprints(&plans_, host_chunk_bytes());
    if (topo::cores_shared(topology_, rank_) && !util::cores_shared()) {
      util::set_cores_shared(true);
      if (split_.local_rank == 0)  // once per node
        util::log(util::LogLevel::info,
                  "ranks outnumber the cores they may run on: waiting ranks yield their core after a few polls");
    }
    segment_ = exec::make_node_segment(split_);
    if (size_ > 1) roll_call_ = std::make_unique<exec::RollCall>(comm_, &sequence_);
    host_context_ = {comm_, rank_, size_, &split_, segment_.get(), &workspace_, &landing_};
    if (progress_thread) requests_.start_thread();
  } catch (...) {
    segment_.reset();
    topo::free_split(split_);
    MPI_Comm_free(&comm_);  // (already failing: its own error would say less)
    throw;
  }
  // Rank 0 prints the effective map once per process (not per communicator).
  static bool printed = false;
  if (rank_ == 0 && !printed) {
    printed = true;
    util::log(util::LogLevel::info, "all_reduce_spec {} on {} ranks: {}", plans_.spec().to_string(), size_,
              spec_map());
    util::log(util::LogLevel::info, "host reductions run the {} kernel", host::simd::chosen().name);
    if (!host::simd::unheeded().empty()) util::log(util::LogLevel::warn, "{}", host::simd::unheeded());
  }
}

Session::~Session() {
  requests_.shut_down();  // what was started runs while everything it needs exists
  util::trace::write_file();  // (a no-op unless tracing)
  gpu_.reset();  // the levels, then the backend
  roll_call_.reset();
  segment_.reset();  // unmap only: the name was unlinked at creation
  int finalized = 0;
  // MPI freed everything already once finalized; calling it now is erroneous.
  if (MPI_Finalized(&finalized) != MPI_SUCCESS || finalized) return;
  topo::free_split(split_);
  if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);  // never throw from a destructor
}

void Session::mark_broken(const char* reason) {
  health_.break_with(reason);
  // Operations we gave up on may still touch our buffers.
  workspace_.abandon();
  staging_.abandon();
  landing_.abandon();
}

void Session::blame_missing_ranks(const util::Deadline& deadline) {
  DeadlineExceeded error = missing_ranks_error(answering(), current_, rank_, size_, deadline);
  health_.break_with(error.what());
  throw error;
}

std::size_t Session::host_chunk_bytes() const {
  return config_.chunk_bytes ? config_.chunk_bytes : kDefaultChunkBytes;
}

namespace {

// The deadline of a refused call: its own timeout when that one is valid.
double usable_timeout(double seconds) { return std::isfinite(seconds) && seconds >= 0 ? std::min(seconds, 1e9) : 0; }

}  // namespace

void Session::refuse(const InvalidArgument& error, const Call& call) {
  requests_.exclusive([&] { refuse_started(error, call); });
  throw error;  // (not reached)
}

void Session::refuse(const InvalidArgument& error, const BatchCall& call) {
  requests_.exclusive([&] { refuse_started(error, call); });
  throw error;  // (not reached)
}

void Session::refuse_started(const InvalidArgument& error, const Call& call) {
  auto refuse_it = [&] {
    refuse_numbered(error, [&] { return fingerprints_.of(call, sequence_); }, call.options->timeout_seconds,
                    to_string(call.collective));
  };
  traced(call, refuse_it);
  throw error;  // (not reached: refuse_it always throws)
}

void Session::refuse_started(const InvalidArgument& error, const BatchCall& call) {
  auto refuse_it = [&] {
    refuse_numbered(error, [&] { return fingerprints_.of(call, sequence_); }, call.options->timeout_seconds, call.name());
  };
  traced(call, refuse_it);
  throw error;  // (not reached: refuse_it always throws)
}

void Session::refuse_numbered(const InvalidArgument& error, const std::function<plan::Fingerprint()>& as_passed,
                              double timeout_seconds, std::string_view collective) {
  if (!check_calls_ || health_.broken()) throw error;
  const util::Deadline deadline(usable_timeout(timeout_seconds));
  util::IdleWorkScope answering_scope(answering());
  ++sequence_;  // the call takes its number, as a valid one does
  try {
    refuse_in_call(error, as_passed(), deadline, collective);
  } catch (const DeadlineExceeded&) {
    blame_missing_ranks(deadline);
  }
}

void Session::refuse_in_call(const InvalidArgument& error, plan::Fingerprint as_passed,
                             const util::Deadline& deadline, std::string_view collective) {
  as_passed.arguments = 1;
  try {
    verify(as_passed, deadline, collective);
  } catch (const Mismatch&) {
    throw InvalidArgument(util::located(
        fmt::format("{} (the ranks of this communicator whose arguments were valid raise Mismatch naming this rank)",
                    error.what())));
  }
  throw error;  // every rank passed the same invalid arguments: each raises its own error
}

void Session::verify(const plan::Fingerprint& mine, const util::Deadline& deadline, std::string_view collective) {
  current_ = {collective, mine.sequence, 0, "call check"};  // what a timeout in the check names
  breaking_on_failure([&] { exec::verify_call(host_context_, mine, deadline, current_); });
}

void Session::run(const Call& call) {
  requests_.exclusive([&] { run_started(call); });
}

void Session::run_started(const Call& call) {
  traced(call, [&] { run_call(call); });
}

bool Session::thread_may_run(const Call& call) const {
  if (call.memory != Memory::host) return false;  // the GPU backend's setup and staging use MPI
  return thread_may_run_host(call.bytes(), [&] {
    return choose(call.collective, call.bytes(), Memory::host, call.options->implementation, call.spec).shared_memory;
  });
}

bool Session::thread_may_run_host(std::size_t bytes,
                                  const std::function<bool()>& every_plan_shared_memory) const {
  if (bytes < kProgressThreadMinBytes) return false;
  if (mpi_any_thread_ || size_ == 1) return true;
  // One node: the call check and the shared-memory plans make no MPI call.
  if (split_.node_count != 1 || segment_ == nullptr) return false;
  try {
    return every_plan_shared_memory();
  } catch (const Error&) {
    return false;  // (a plan that cannot be made fails when the request runs, on the caller's thread)
  }
}

void Session::run_call(const Call& call) {
  health_.ensure_usable();
  const util::Deadline deadline(call.options->timeout_seconds);
  util::IdleWorkScope answering_scope(answering());
  ++sequence_;  // every call takes one number, whatever happens next, so the ranks stay in step
  try {
    if (call.memory == Memory::cuda) {
      if (check_calls_) verify(fingerprints_.of(call, sequence_), deadline, to_string(call.collective));
      run_gpu(call, deadline);
    } else {
      run_host(call, deadline, check_calls_);
    }
  } catch (const DeadlineExceeded&) {
    blame_missing_ranks(deadline);
  }
  landing_.reset();
}

void Session::run_host(const Call& call, const util::Deadline& deadline, bool check) {
  const std::string_view collective_name = call.name.empty() ? to_string(call.collective) : call.name;
  plan::Fingerprint fingerprint_storage;
  const plan::Fingerprint* mine = nullptr;
  if (check) fingerprint_storage = fingerprints_.of(call, sequence_), mine = &fingerprint_storage;
  if (call.job.count == 0) {  // still collective: the ranks must agree that it is
    if (mine) verify(*mine, deadline, collective_name);
    return;
  }
  const std::size_t bytes = call.bytes();
  const plan::Choice& choice = plans_.cached(call.collective, bytes, Memory::host, call.options->implementation, call.spec);
  plan::Job job = call.job;  // mean stays: exec runs sum and finishes
  job.shards = choice.shards;
  job.chunk_bytes = host_chunk_bytes();
  const plan::CallInfo info{collective_name, sequence_, bytes, plans_.described()};
  current_ = info;
  util::log(util::LogLevel::trace, "{} #{}: {} bytes with {}", collective_name, sequence_, bytes, plans_.described());
  breaking_on_failure(
      [&] { exec::run_host(call.collective, choice, job, call.contributors, host_context_, deadline, info, mine); });
}

void Session::run_gpu(const Call& call, const util::Deadline& deadline) {
  gpu_backend();  // collective the first time: before the count-0 return, which every rank takes alike
  if (call.job.count == 0) return;
  const std::size_t bytes = call.bytes();
  const plan::Choice& choice = plans_.cached(call.collective, bytes, Memory::cuda, call.options->implementation, call.spec);
  current_ = {to_string(call.collective), sequence_, bytes, plans_.described()};
  plan::Job job = call.job;  // mean stays: exec runs sum and finishes
  job.shards = choice.shards;
  job.chunk_bytes = config_.chunk_bytes;
  util::log(util::LogLevel::trace, "{} #{} (cuda): {} bytes with {}", current_.collective, sequence_, bytes,
            plans_.described());
  const gpu::CallContext context{&deadline, current_, call.options->stream, {call.device}};
  breaking_on_failure(
      [&] { exec::run_gpu(call.collective, choice, job, call.contributors, gpu_context(), context); });
}

gpu::Backend& Session::gpu_backend() {
  health_.ensure_usable();
  return gpu_.backend(comm_, split_, rank_);
}

}  // namespace strata::api
