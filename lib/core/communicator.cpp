// Communicator: the public entry points. Each call runs the four stages of
// the data path: validate (core/validate), plan (plan/select, plan/packing),
// execute (the chosen host algorithm over a Transport) and finish (mean
// scaling, pack callbacks, marking the communicator broken on failures).
#include "strata/communicator.hpp"

#include <fmt/format.h>

#include <array>
#include <vector>

#include "core/check.hpp"
#include "core/communicator_impl.hpp"
#include "core/log.hpp"
#include "core/validate.hpp"
#include "core/where.hpp"
#include "gpu/backend.hpp"
#include "host/hierarchical.hpp"
#include "host/reduce_kernel.hpp"
#include "host/shm_rounds.hpp"
#include "plan/packing.hpp"
#include "topo/discover.hpp"

namespace strata {

// Pipeline granularity of the chunked algorithms when Config leaves it 0.
constexpr std::size_t kDefaultChunkBytes = 256 * 1024;

void Communicator::Impl::ensure_usable() const {
  if (!broken_reason.empty())
    throw PeerFailure(fmt::format("strata [{}]: this communicator is broken by an earlier failure ({}); "
                                  "create a new one (and check the peers) before calling again",
                                  core::where(), broken_reason));
}

void Communicator::Impl::execute(plan::Collective collective, host::Job job, const CommunicationOptions& options,
                                 const core::Deadline& deadline, std::size_t contributors, const plan::Spec* spec_override) {
  ensure_usable();
  ++sequence;
  if (job.count == 0) return;
  const std::size_t bytes = job.count * job.element_bytes();
  const plan::Spec* effective = spec_override ? spec_override : &spec;
  LastChoice& last = last_choice;
  if (!last.choice.algorithm || last.spec != effective || last.collective != collective || last.bytes != bytes ||
      last.implementation != options.implementation)
    last = {effective, collective, bytes, options.implementation,
            plan::choose(*effective, collective, bytes, options.implementation, split.node_count)};
  const plan::Choice choice = last.choice;
  const bool mean = job.op == ReduceOp::mean;
  if (mean) job.op = ReduceOp::sum;
  job.shards = choice.shards;
  job.chunk_bytes = config.chunk_bytes ? config.chunk_bytes : kDefaultChunkBytes;
  const std::string_view collective_name = to_string(collective);
  const host::CallInfo info{collective_name, sequence, bytes, choice.algorithm->name};
  core::log(core::LogLevel::trace, "{} #{}: {} bytes with {}", collective_name, sequence, bytes, choice.describe());
  const bool wants_shm = choice.algorithm->uses_shared_memory;
  breaking_on_failure([&] {
    if (choice.cross && split.node_count > 1) {
      const host::NodeContext node{&split, wants_shm ? segment.get() : nullptr};
      host::hierarchical_all_reduce(job, *choice.algorithm, *choice.cross, node, deadline, info, workspace);
    } else {
      host::Transport transport(comm, rank, size, deadline, info, workspace);
      // On a single node the node communicator orders ranks like `comm`.
      if (wants_shm && split.node_count == 1) transport.set_shared_memory(segment.get());
      switch (collective) {
        case plan::Collective::all_reduce: choice.algorithm->all_reduce(transport, job); break;
        case plan::Collective::reduce: choice.algorithm->reduce(transport, job); break;
        case plan::Collective::broadcast: choice.algorithm->broadcast(transport, job); break;
      }
    }
  });
  const bool has_result = collective == plan::Collective::all_reduce || rank == job.root;
  if (mean && has_result) host::divide_by(job.out, job.count, job.dtype, contributors);
}

plan::SpecEntry gpu_entry(const plan::Spec& spec, std::size_t bytes, Implementation implementation) {
  if (implementation == Implementation::nccl || spec.is_auto()) return {"nccl", 1, -1};
  if (implementation == Implementation::ring) return {"xring", 1, -1};
  return spec.select(bytes);
}

gpu::Backend& Communicator::Impl::gpu_backend(const core::Deadline& deadline, std::string_view collective) {
  ensure_usable();
  if (gpu) return *gpu;
  const GpuAssignment& mine = topology.ranks[static_cast<std::size_t>(rank)].gpu;
  std::string why;  // empty: this rank can drive its GPU
  if (gpu::device_available(&why) && mine.cuda_device < 0) why = mine.how;
  // The lowest rank that cannot go on, and its reason, reach every rank.
  host::Transport agree(comm, rank, size, deadline, {collective, sequence + 1, 0, "GPU setup"}, workspace);
  int first_failing = why.empty() ? size : rank;
  MPI_Request request = MPI_REQUEST_NULL;
  STRATA_CHECK_MPI(MPI_Iallreduce(MPI_IN_PLACE, &first_failing, 1, MPI_INT, MPI_MIN, comm, &request));
  agree.wait_collective(request);
  if (first_failing < size) {
    std::array<char, 512> text{};
    if (rank == first_failing) why.copy(text.data(), text.size() - 1);
    STRATA_CHECK_MPI(MPI_Ibcast(text.data(), static_cast<int>(text.size()), MPI_CHAR, first_failing, comm, &request));
    agree.wait_collective(request);
    throw Unavailable(fmt::format("strata [{}]: CUDA tensors are unavailable: {}: {}; pass host memory",
                                  core::where(), first_failing == rank ? std::string("this rank")
                                                                       : fmt::format("rank {}", first_failing),
                                  text.data()));
  }
  gpu = gpu::make_backend(comm, split, mine.cuda_device);
  return *gpu;
}

void Communicator::Impl::execute_gpu(Collective collective, host::Job job, int device,
                                     const CommunicationOptions& options, const core::Deadline& deadline,
                                     std::size_t contributors, const plan::Spec* spec_override) {
  gpu::Backend& backend = gpu_backend(deadline, to_string(collective));
  ++sequence;
  const plan::Spec& effective = spec_override ? *spec_override : spec;
  const std::size_t bytes = job.count * job.element_bytes();
  const plan::SpecEntry entry = gpu_entry(effective, bytes, options.implementation);  // alive for the call
  gpu::GpuJob g;
  g.in = job.in;
  g.out = job.out;
  g.count = job.count;
  g.dtype = job.dtype;
  g.op = job.op;  // mean included: the backend divides by `contributors`
  g.contributors = contributors;
  g.root = job.root;
  g.device = device;
  g.algorithm = entry.algorithm;
  g.shards = entry.shards;
  g.chunk_bytes = config.chunk_bytes;
  g.sequence = sequence;
  core::log(core::LogLevel::trace, "{} #{} (cuda): {} bytes with {}", to_string(collective), sequence, bytes,
            entry.algorithm);
  breaking_on_failure([&] {
    switch (collective) {
      case Collective::all_reduce: backend.all_reduce(g, deadline); break;
      case Collective::reduce: backend.reduce(g, deadline); break;
      case Collective::broadcast: backend.broadcast(g, deadline); break;
    }
  });
}

void Communicator::Impl::mark_broken(const char* reason) {
  broken_reason = reason;
  // Operations we gave up on may still touch our buffers.
  workspace.abandon();
  staging.abandon();
}

Communicator::Impl::~Impl() {
  segment.reset();  // unmap only: the name was unlinked at creation
  topo::free_split(split);
}

Communicator::Impl& impl_of(Communicator& comm) { return *comm.impl_; }

Communicator::Communicator(MPI_Comm comm, Config config) : impl_(std::make_unique<Impl>()) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) throw InvalidArgument("strata::Communicator needs MPI: call MPI_Init before constructing it");
  if (comm == MPI_COMM_NULL) throw InvalidArgument("comm = MPI_COMM_NULL: pass a valid communicator");
  // Parse the spec before the collective dup: a bad spec must not leave
  // other ranks inside MPI_Comm_dup. (Ranks share config and environment in
  // practice, so all of them throw.)
  impl_->spec = plan::resolve_spec(config.all_reduce_spec);
  impl_->config = std::move(config);
  STRATA_CHECK_MPI(MPI_Comm_dup(comm, &impl_->comm));
  STRATA_CHECK_MPI(MPI_Comm_set_errhandler(impl_->comm, MPI_ERRORS_RETURN));
  STRATA_CHECK_MPI(MPI_Comm_rank(impl_->comm, &impl_->rank));
  STRATA_CHECK_MPI(MPI_Comm_size(impl_->comm, &impl_->size));
  impl_->split = topo::split_nodes(impl_->comm);
  impl_->topology = topo::discover(impl_->comm, impl_->split);
  if (impl_->split.local_size > 1)
    impl_->segment = std::make_unique<host::ShmSegment>(impl_->split.node,
                                                        host::shm::set_bytes_for(impl_->split.local_size));
  // Rank 0 prints the effective map once per process (not per communicator).
  static bool printed = false;
  if (impl_->rank == 0 && !printed) {
    printed = true;
    core::log(core::LogLevel::info, "all_reduce_spec {} on {} ranks: {}", impl_->spec.to_string(), impl_->size,
              plan::describe_map(impl_->spec, impl_->split.node_count));
  }
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
const Topology& Communicator::topology() const { return impl_->topology; }
bool Communicator::broken() const { return !impl_->broken_reason.empty(); }

std::string Communicator::algorithm_for(std::size_t bytes, Collective collective) const {
  return plan::choose(impl_->spec, collective, bytes, Implementation::automatic, impl_->split.node_count).describe();
}

void Communicator::all_reduce(Tensor in, Tensor out, ReduceOp op, const CommunicationOptions& options) {
  core::validate_options(options);
  core::validate_op(op);
  core::validate_tensor(in, "in");
  core::validate_tensor(out, "out");
  core::validate_in_out(in, out);
  const host::Job job{in.data, out.data, in.count, in.dtype, op};
  const core::Deadline deadline(options.timeout_seconds);
  if (in.memory == Memory::cuda)
    impl_->execute_gpu(Collective::all_reduce, job, in.device, options, deadline, static_cast<std::size_t>(impl_->size));
  else
    impl_->execute(Collective::all_reduce, job, options, deadline, static_cast<std::size_t>(impl_->size));
}

void Communicator::reduce(Tensor in, Tensor out, ReduceOp op, int root, const CommunicationOptions& options) {
  core::validate_options(options);
  core::validate_op(op);
  core::validate_root(root, impl_->size);
  core::validate_tensor(in, "in");
  const bool is_root = impl_->rank == root;
  core::validate_tensor(out, "out", /*data_required=*/is_root);
  if (is_root || out.data != nullptr) core::validate_in_out(in, out);
  host::Job job{in.data, is_root ? out.data : nullptr, in.count, in.dtype, op};
  job.root = root;
  const core::Deadline deadline(options.timeout_seconds);
  if (in.memory == Memory::cuda)
    impl_->execute_gpu(Collective::reduce, job, in.device, options, deadline, static_cast<std::size_t>(impl_->size));
  else
    impl_->execute(Collective::reduce, job, options, deadline, static_cast<std::size_t>(impl_->size));
}

void Communicator::broadcast(Tensor buffer, int root, const CommunicationOptions& options) {
  core::validate_options(options);
  core::validate_root(root, impl_->size);
  core::validate_tensor(buffer, "buffer");
  host::Job job{buffer.data, buffer.data, buffer.count, buffer.dtype, ReduceOp::sum};
  job.root = root;
  const core::Deadline deadline(options.timeout_seconds);
  if (buffer.memory == Memory::cuda)
    impl_->execute_gpu(Collective::broadcast, job, buffer.device, options, deadline, 1);
  else
    impl_->execute(Collective::broadcast, job, options, deadline, 1);
}

void Communicator::batch_all_reduce(std::span<Tensor> tensors, ReduceOp op, const CommunicationOptions& options,
                                    std::function<void(std::size_t pack)> on_pack_done) {
  batch_all_reduce(tensors, op, PackingOptions{}, options, std::move(on_pack_done));
}

void Communicator::batch_all_reduce(std::span<Tensor> tensors, ReduceOp op, const PackingOptions& packing,
                                    const CommunicationOptions& options,
                                    std::function<void(std::size_t pack)> on_pack_done) {
  core::validate_options(options);
  core::validate_op(op);
  plan::validate_packing(packing);
  for (std::size_t i = 0; i < tensors.size(); ++i) core::validate_tensor(tensors[i], fmt::format("tensors[{}]", i));
  core::validate_same_memory(tensors, "tensors");
  core::validate_disjoint(tensors, "tensors");
  std::vector<std::vector<Tensor>> batch;
  batch.reserve(tensors.size());
  for (const Tensor& t : tensors) batch.push_back({t});
  impl_->run_batch(plan::Collective::all_reduce, batch, op, 0, packing, options, nullptr, on_pack_done);
}

}  // namespace strata
