// Session: construction (duplicate, nodes, topology, the executor), the
// call numbering and the refusal protocol; every call runs in the executor.
#include "api/session.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <string_view>

#include "api/model_auto.hpp"
#include "api/numerics_wanted.hpp"
#include "api/validate.hpp"
#include "exec/discover.hpp"
#include "exec/registry.hpp"
#include "plan/spec.hpp"
#include "topo/placement.hpp"
#include "util/abandoned.hpp"
#include "util/check.hpp"
#include "util/log.hpp"
#include "util/trace.hpp"
#include "util/where.hpp"

namespace strata::api {
namespace {

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
  CallRecorder::prepare();  // (STRATA_FLIGHT_RECORDS)
  const bool progress_thread = progress_thread_wanted(config);
  plan::Spec spec = plan::resolve_spec(config.all_reduce_spec, exec::catalogue());
  const bool model_wanted = model_auto_wanted(spec);
  check_calls_ = call_check_wanted(config);
  const plan::Numerics numerics = numerics_wanted(config);
  const bool verifies = verification_wanted(config);
  STRATA_CHECK_MPI(MPI_Comm_dup(comm, &comm_));
  // From here on a failure must free what was made: the destructor does not
  // run for a constructor that throws.
  try {
    STRATA_CHECK_MPI(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
    STRATA_CHECK_MPI(MPI_Comm_rank(comm_, &rank_));
    STRATA_CHECK_MPI(MPI_Comm_size(comm_, &size_));
    const Agreed agreed = agree_on_call_check(comm_, size_, check_calls_, model_wanted, verifies, numerics);
    if (util::trace::enabled()) [[unlikely]] {
      util::trace::start();
      if (agreed.every_rank_traces) util::trace::align_clocks(comm_, rank_, size_);
      else if (rank_ == 0)
        util::log(util::LogLevel::warn, "STRATA_TRACE is set on some ranks only: trace clocks stay unaligned");
    }
    check_calls_ = check_calls_ && size_ > 1;  // one rank has nobody to disagree with
    recorder_.start(comm_, rank_, size_);
    int thread_level = MPI_THREAD_SINGLE;
    STRATA_CHECK_MPI(MPI_Query_thread(&thread_level));
    split_ = topo::split_nodes(comm_);
    exec::Discovered discovered = exec::discover(comm_, split_);
    topology_ = std::move(discovered.topology);
    exec::ExecutorSetup setup{.comm = comm_,
                              .rank = rank_,
                              .size = size_,
                              .split = &split_,
                              .gpu_rows = std::move(discovered.gpu_rows),
                              .chunk_bytes = config.chunk_bytes,
                              .mpi_any_thread = thread_level == MPI_THREAD_MULTIPLE,
                              .numerics = numerics,
                              .verifies = verifies,
                              .sequence = &sequence_};
    setup.gpu_plane = topo::decide(setup.gpu_rows, split_.min_local_size);
    plan::Layout layout{.node_count = split_.node_count,
                        .local_size = split_.local_size,
                        .reproducible = numerics.reproducible,
                        .ranks = size_};
    setup.gpu_plane.apply_to(layout);
    if (agreed.every_rank_models)
      layout.modelled_all_reduce = modelled_all_reduce(
          comm_, rank_, topology_, plan::default_spec(Collective::all_reduce, Memory::host, layout));
    setup.plans = exec::PlanCache(std::move(spec), layout);
    if (topo::cores_shared(topology_, rank_) && !util::cores_shared()) {
      util::set_cores_shared(true);
      if (split_.local_rank == 0)  // once per node
        util::log(util::LogLevel::info,
                  "ranks outnumber the cores they may run on: waiting ranks yield their core after a few polls");
    }
    executor_.start(std::move(setup));
    fingerprints_ = Fingerprints(&executor_.plans(), executor_.chunk_bytes());
    if (progress_thread) requests_.start_thread();
  } catch (...) {
    executor_.reset();
    topo::free_split(split_);
    MPI_Comm_free(&comm_);  // (already failing: its own error would say less)
    throw;
  }
  // Rank 0 prints the effective map once per process (not per communicator).
  static bool printed = false;
  if (rank_ == 0 && !printed) {
    printed = true;
    util::log(util::LogLevel::info, "all_reduce_spec {} on {} ranks: {}", executor_.plans().spec().to_string(), size_, spec_map());
  }
  // The numerics, once per process and mode, where they are not the default.
  static plan::Numerics said;
  if (rank_ == 0 && (numerics.reproducible != said.reproducible || numerics.accumulate_f32 != said.accumulate_f32)) {
    said = numerics;
    util::log(util::LogLevel::info, "reproducible mode {}{}", plan::to_string(numerics.reproducible),
              numerics.accumulate_f32 ? ", 16-bit sums accumulated in f32" : "");
  }
}

Session::~Session() {
  requests_.shut_down();  // what was started runs while everything it needs exists
  util::trace::write_file();  // (a no-op unless tracing)
  executor_.reset();
  int finalized = 0;
  // MPI freed everything already once finalized; calling it now is erroneous.
  if (MPI_Finalized(&finalized) != MPI_SUCCESS || finalized) return;
  topo::free_split(split_);
  util::free_comm(comm_);  // (kept where operations given up on still use it)
}

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
  if (!check_calls_ || executor_.broken()) throw error;
  ++sequence_;  // the call takes its number, as a valid one does
  plan::Fingerprint mine = as_passed();
  mine.arguments = 1;
  try {
    executor_.verify(mine, timeout_seconds, collective);
  } catch (const Mismatch&) {
    throw InvalidArgument(util::located(
        fmt::format("{} (the ranks of this communicator whose arguments were valid raise Mismatch naming this rank)",
                    error.what())));
  }
  throw error;  // every rank passed the same invalid arguments: each raises its own error
}

namespace {

// A stream-ordered call handed to the progress thread (Session::run): what
// it points at, owned, since its caller has returned. Its errors go to the
// communicator (the next call, check()); its gate opens once it ran.
template <typename AnyCall>
struct HandedOver final : RequestState {
  Session* session = nullptr;
  CommunicationOptions options;
  std::optional<plan::Spec> spec;
  std::vector<std::vector<Tensor>> batch;         // a batch's tensor lists
  std::function<void(std::size_t)> on_pack_done;  // and its callback
  AnyCall call;
  exec::Ordering ordering;

  void run() override {
    std::exception_ptr error;
    try {
      session->run_started(call);
    } catch (...) {
      error = std::current_exception();
    }
    session->handed_over_ran(ordering, error);
  }
};

// What a call points at that a batch adds (nothing for a single call).
void own_more(HandedOver<Call>&, const Call&) {}
void own_more(HandedOver<BatchCall>& state, const BatchCall& call) {
  state.batch = *call.batch;
  state.call.batch = &state.batch;
  if (call.on_pack_done) {
    state.on_pack_done = *call.on_pack_done;
    state.call.on_pack_done = &state.on_pack_done;
  }
}

// Copies what `call` points at into `state` and points the copy there.
template <typename AnyCall>
void own(HandedOver<AnyCall>& state, const AnyCall& call) {
  state.options = *call.options;
  state.call = call;
  state.call.options = &state.options;
  if (call.spec) {
    state.spec = *call.spec;
    state.call.spec = &*state.spec;
  }
  own_more(state, call);
}

}  // namespace

std::optional<InvalidArgument> Session::precheck(const Call& call) {
  if (call.memory != Memory::cuda) return std::nullopt;
  try {
    validate_device(call.device, executor_.gpu_row(), "tensor");
  } catch (const InvalidArgument& e) {
    return e;
  }
  return executor_.refusal(call);
}

bool Session::only_enqueues(const Call& call) const { return executor_.only_enqueues(call); }

template <typename AnyCall>
void Session::run_any(const AnyCall& call) {
  if (const std::optional<InvalidArgument> invalid = precheck(call)) refuse(*invalid, call);
  if (handing_over(call)) return hand_over(call);
  requests_.exclusive([&] { traced(call, [&] { run_call(call); }); });
}

template <typename AnyCall>
std::shared_ptr<exec::Flight> Session::run_any_started(const AnyCall& call) {
  if (const std::optional<InvalidArgument> invalid = precheck(call)) refuse_started(*invalid, call);
  std::shared_ptr<exec::Flight> flight;
  traced(call, [&] { flight = run_call(call); });
  return flight;
}

void Session::run(const Call& call) { run_any(call); }
void Session::run_batch(const BatchCall& call) { run_any(call); }
std::shared_ptr<exec::Flight> Session::run_started(const Call& call) { return run_any_started(call); }
std::shared_ptr<exec::Flight> Session::run_started(const BatchCall& call) { return run_any_started(call); }

std::shared_ptr<exec::Flight> Session::run_call(const Call& call) {
  return recorder_.dumping([&] {
    executor_.ensure_usable();
    plan::Fingerprint fingerprint;
    const exec::Ticket ticket = numbered(fingerprint, [&](std::uint64_t n) { return fingerprints_.of(call, n); });
    return recorded(call, ticket.sequence, [&] { return executor_.run(call, ticket); });
  });
}

template <typename AnyCall>
void Session::hand_over(const AnyCall& call) {
  auto state = std::make_shared<HandedOver<AnyCall>>();
  state->session = this;
  own(*state, call);
  state->ordering = executor_.order_now(state->call, /*gate=*/true);
  state->call.ordering = &state->ordering;
  requests_.start_thread();
  requests_.adopt(*state, false, /*thread_may_run=*/true);
  ++handed_over_;
  requests_.start(state);
}

void Session::handed_over_ran(const exec::Ordering& ordering, std::exception_ptr error) noexcept {
  if (error) executor_.report(error);
  executor_.settle(ordering);
  --handed_over_;
}

}  // namespace strata::api
