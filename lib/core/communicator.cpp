// Communicator: the public entry points. Each call runs the four stages of
// the data path: validate (core/validate), plan (plan/select), execute (the
// chosen host algorithm over a Transport) and finish (mean scaling, pack
// callbacks, marking the communicator broken on timeouts).
#include "strata/communicator.hpp"

#include <fmt/format.h>

#include <cstring>
#include <vector>

#include "core/check.hpp"
#include "core/deadline.hpp"
#include "core/log.hpp"
#include "core/validate.hpp"
#include "core/where.hpp"
#include "core/workspace.hpp"
#include "host/algorithm.hpp"
#include "host/reduce_kernel.hpp"
#include "plan/select.hpp"

namespace strata {

// Pipeline granularity of the chunked algorithms when Config leaves it 0.
constexpr std::size_t kDefaultChunkBytes = 256 * 1024;

struct Communicator::Impl {
  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0;
  int size = 1;
  Config config;
  plan::Spec spec;
  core::Workspace workspace;
  std::uint64_t sequence = 0;
  std::string broken_reason;  // non-empty once broken

  void ensure_usable() const {
    if (!broken_reason.empty())
      throw PeerFailure(fmt::format("strata [{}]: this communicator is broken by an earlier failure ({}); "
                                    "create a new one (and check the peers) before calling again",
                                    core::where(), broken_reason));
  }

  // Execute one collective on validated input. `job.op` may be mean: the
  // algorithm runs sum and the finish step divides where the result lands.
  void execute(plan::Collective collective, host::Job job, const CommunicationOptions& options,
               const core::Deadline& deadline) {
    ensure_usable();
    ++sequence;
    if (job.count == 0) return;
    const std::size_t bytes = job.count * job.element_bytes();
    const plan::Choice choice = plan::choose(spec, collective, bytes, options.implementation);
    const bool mean = job.op == ReduceOp::mean;
    if (mean) job.op = ReduceOp::sum;
    job.shards = choice.shards;
    job.chunk_bytes = config.chunk_bytes ? config.chunk_bytes : kDefaultChunkBytes;
    const std::string collective_name(plan::to_string(collective));
    host::Transport transport(comm, deadline, {collective_name, sequence, bytes, choice.algorithm->name}, workspace);
    core::log(core::LogLevel::trace, "{} #{}: {} bytes with {}", collective_name, sequence, bytes, choice.describe());
    try {
      switch (collective) {
        case plan::Collective::all_reduce: choice.algorithm->all_reduce(transport, job); break;
        case plan::Collective::reduce: choice.algorithm->reduce(transport, job); break;
        case plan::Collective::broadcast: choice.algorithm->broadcast(transport, job); break;
      }
    } catch (const DeadlineExceeded& e) {
      mark_broken(e.what());
      throw;
    } catch (const BackendError& e) {
      mark_broken(e.what());
      throw;
    }
    const bool has_result = collective == plan::Collective::all_reduce || rank == job.root;
    if (mean && has_result) host::divide_by(job.out, job.count, job.dtype, static_cast<std::size_t>(size));
  }

  void mark_broken(const char* reason) {
    broken_reason = reason;
    // Operations we gave up on may still touch our scratch buffers.
    workspace.abandon();
  }
};

Communicator::Communicator(MPI_Comm comm, Config config) : impl_(std::make_unique<Impl>()) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) throw InvalidArgument("strata::Communicator needs MPI: call MPI_Init before constructing it");
  if (comm == MPI_COMM_NULL) throw InvalidArgument("comm = MPI_COMM_NULL: pass a valid communicator");
  // Parse the spec before the collective dup: a bad spec on one rank must
  // not leave the others inside MPI_Comm_dup. (Every rank gets the same
  // config and environment in practice, so all of them throw.)
  impl_->spec = plan::resolve_spec(config.all_reduce_spec);
  impl_->config = std::move(config);
  STRATA_CHECK_MPI(MPI_Comm_dup(comm, &impl_->comm));
  STRATA_CHECK_MPI(MPI_Comm_set_errhandler(impl_->comm, MPI_ERRORS_RETURN));
  STRATA_CHECK_MPI(MPI_Comm_rank(impl_->comm, &impl_->rank));
  STRATA_CHECK_MPI(MPI_Comm_size(impl_->comm, &impl_->size));
  if (impl_->rank == 0)
    core::log(core::LogLevel::info, "communicator of {} ranks, all_reduce_spec {} (auto = {})", impl_->size,
              impl_->spec.to_string(), plan::default_host_spec().to_string());
}

Communicator::~Communicator() {
  if (!impl_ || impl_->comm == MPI_COMM_NULL) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Comm_free(&impl_->comm);  // never throw from a destructor
}

Communicator::Communicator(Communicator&&) noexcept = default;
Communicator& Communicator::operator=(Communicator&&) noexcept = default;

int Communicator::rank() const { return impl_->rank; }
int Communicator::size() const { return impl_->size; }
bool Communicator::broken() const { return !impl_->broken_reason.empty(); }

std::string Communicator::algorithm_for(std::size_t bytes) const {
  return plan::choose(impl_->spec, plan::Collective::all_reduce, bytes, Implementation::automatic).describe();
}

void Communicator::all_reduce(Tensor in, Tensor out, ReduceOp op, const CommunicationOptions& options) {
  core::validate_options(options);
  core::validate_op(op);
  core::validate_tensor(in, "in");
  core::validate_tensor(out, "out");
  core::validate_in_out(in, out);
  impl_->execute(plan::Collective::all_reduce, {in.data, out.data, in.count, in.dtype, op}, options,
                 core::Deadline(options.timeout_seconds));
}

void Communicator::reduce(Tensor in, Tensor out, ReduceOp op, int root, const CommunicationOptions& options) {
  core::validate_options(options);
  core::validate_op(op);
  core::validate_root(root, impl_->size);
  core::validate_tensor(in, "in");
  const bool is_root = impl_->rank == root;
  core::validate_tensor(out, "out", /*data_required=*/is_root);
  if (is_root || out.data != nullptr) core::validate_in_out(in, out);
  host::Job job{in.data, out.data, in.count, in.dtype, op};
  job.root = root;
  impl_->execute(plan::Collective::reduce, job, options, core::Deadline(options.timeout_seconds));
}

void Communicator::broadcast(Tensor buffer, int root, const CommunicationOptions& options) {
  core::validate_options(options);
  core::validate_root(root, impl_->size);
  core::validate_tensor(buffer, "buffer");
  host::Job job{buffer.data, buffer.data, buffer.count, buffer.dtype, ReduceOp::sum};
  job.root = root;
  impl_->execute(plan::Collective::broadcast, job, options, core::Deadline(options.timeout_seconds));
}

void Communicator::batch_all_reduce(std::span<Tensor> tensors, ReduceOp op, const CommunicationOptions& options,
                                    std::function<void(std::size_t pack)> on_pack_done) {
  core::validate_options(options);
  core::validate_op(op);
  for (std::size_t i = 0; i < tensors.size(); ++i) core::validate_tensor(tensors[i], fmt::format("tensors[{}]", i));
  // One deadline for the whole batch. Until packing lands each tensor is its
  // own pack, reduced in place in input order.
  const core::Deadline deadline(options.timeout_seconds);
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    impl_->execute(plan::Collective::all_reduce, {t.data, t.data, t.count, t.dtype, op}, options, deadline);
    if (on_pack_done) on_pack_done(i);
  }
}

}  // namespace strata
