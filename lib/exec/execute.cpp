#include "exec/execute.hpp"

#include <fmt/format.h>

#include <optional>

#include "exec/blockwise.hpp"
#include "exec/finish.hpp"
#include "exec/hierarchical.hpp"
#include "exec/registry.hpp"
#include "exec/reproducible.hpp"
#include "exec/verify.hpp"
#include "host/transport.hpp"
#include "plan/collective.hpp"
#include "plan/replicas.hpp"
#include "util/breaking.hpp"
#include "util/where.hpp"

namespace strata::exec {
namespace {

// The workspace slot of the hierarchical driver's own buffer; algorithms
// use slots below it (spec.cpp bounds shards, hence xring's slots, at 64).
constexpr std::size_t kDriverSlot = 96;
// The device scratch slot of a flat reduce_scatter's whole result: the
// packs' slot, free in a call on one tensor (gpu/backend.hpp).
constexpr int kWholeDeviceSlot = 2;

// `collective` over `level`, which spans the whole communicator (this rank
// is `rank` of `size`). `whole`: reduce_scatter's scratch of `size` blocks
// in the level's memory (ignored otherwise).
void run_flat(Collective collective, plan::Level& level, const plan::Job& job, int rank, int size, void* whole) {
  switch (collective) {
    case Collective::all_reduce: level.all_reduce(job); return;
    case Collective::reduce: level.reduce(job); return;
    case Collective::broadcast: level.broadcast(job); return;
    case Collective::reduce_scatter: reduce_scatter_blocks(level, job, rank, size, whole); return;
    case Collective::all_gather: level.all_gather_blocks(job, rank, size); return;
  }
}

// The bytes of reduce_scatter's scratch: `size` blocks (0 for the others).
std::size_t whole_bytes(Collective collective, const plan::Job& job, int size) {
  return collective == Collective::reduce_scatter ? job.bytes() * static_cast<std::size_t>(size) : 0;
}

// The GPU level of `algorithm` over `group`: a GPU algorithm's own, or a
// host algorithm through pinned copies (the registry says which).
plan::Level& gpu_level(gpu::Levels& levels, const plan::Algorithm& algorithm, plan::Group group) {
  const Entry& entry = entry_of(algorithm);
  return entry.gpu ? levels.level(*entry.gpu, group) : levels.staged(*entry.host, group);
}

void run_gpu_levels(Collective collective, const plan::Choice& choice, const plan::Job& job,
                    const GpuContext& context) {
  gpu::Levels& levels = *context.levels;
  if (choice.shape == plan::Shape::hierarchical) {
    // Every rank makes its node level first, then the cross members their
    // cross level: NCCL communicators are created in the same order
    // everywhere.
    plan::Level& intra = gpu_level(levels, *choice.algorithm, plan::Group::node);
    plan::Level* cross =
        context.split->cross != MPI_COMM_NULL ? &gpu_level(levels, *choice.cross, plan::Group::cross) : nullptr;
    hierarchical_all_reduce(job, *context.split, intra, cross);
    return;
  }
  const std::size_t whole = whole_bytes(collective, job, context.size);
  run_flat(collective, gpu_level(levels, *choice.algorithm, plan::Group::world), job, context.rank, context.size,
           whole ? context.backend->device_scratch(kWholeDeviceSlot, whole) : nullptr);
}

void refuse_forbidden(const plan::Choice& choice, const GpuContext& context, const plan::CallInfo& info) {
  if (const std::string why = context.plane->refusal(choice); !why.empty())
    throw Unavailable(fmt::format("strata [{}]: {} #{} on CUDA tensors plans {}, which cannot run here: {}. Use a "
                                  "spec whose levels need no NCCL there (psgpu, or a host algorithm such as xring), "
                                  "or run one rank per GPU",
                                  util::where(), info.collective, info.sequence, choice.describe(), why));
}

// Opens a GPU call for its scope.
class CallScope {
 public:
  CallScope(gpu::Backend& backend, const gpu::CallContext& call) : backend_(backend) { backend_.open(call); }
  ~CallScope() { backend_.close(); }
  CallScope(const CallScope&) = delete;
  CallScope& operator=(const CallScope&) = delete;

 private:
  gpu::Backend& backend_;
};

template <typename Work>
void breaking_backend(gpu::Backend& backend, Work&& work) {
  util::breaking_on_failure(work, [&backend](const char* what) { backend.mark_broken(what); });
}

}  // namespace

void run_host_plan(Collective collective, const plan::Choice& choice, const plan::Job& job,
                   const HostContext& context, const util::Deadline& deadline, const plan::CallInfo& info,
                   const plan::Fingerprint* check) {
  const host::Algorithm& algorithm = *entry_of(*choice.algorithm).host;
  host::ShmSegment* segment = choice.shared_memory ? context.segment : nullptr;
  // Every collective over shared memory carries the check in its first
  // round.
  const bool check_rides_along = segment && choice.shape == plan::Shape::flat;
  if (check && !check_rides_along) {
    // MPI's own collective, or any all-gather (a copy, the same bits
    // whatever the plan): the check's all-reduce may carry the data.
    const CarriedCall carry{collective, &job};
    const bool carriable =
        choice.shape == plan::Shape::flat &&
        ((choice.algorithm->carried_by_check && !plan::blockwise(collective)) || collective == Collective::all_gather);
    if (verify_call(context, *check, deadline, info, carriable ? &carry : nullptr)) return;
  }
  const topo::NodeSplit& split = *context.split;
  // (plan::choose never makes reduce_scatter or all_gather hierarchical.)
  if (choice.shape == plan::Shape::hierarchical && !plan::blockwise(collective)) {
    host::Transport local(split.node, deadline, info, *context.workspace, context.landing);
    host::LevelSlot intra_slot;
    plan::Level& intra = algorithm.make_level(algorithm, local, segment, intra_slot);
    std::optional<host::Transport> across;
    host::LevelSlot cross_slot;
    plan::Level* cross = nullptr;
    if (split.cross != MPI_COMM_NULL) {
      across.emplace(split.cross, deadline, info, *context.workspace, context.landing);
      const host::Algorithm& cross_algorithm = *entry_of(*choice.cross).host;
      cross = &cross_algorithm.make_level(cross_algorithm, *across, nullptr, cross_slot);
    }
    switch (collective) {
      case Collective::all_reduce: hierarchical_all_reduce(job, split, intra, cross); return;
      case Collective::reduce: {
        void* partial = context.rank == job.root ? nullptr : context.workspace->get(kDriverSlot, job.bytes());
        hierarchical_reduce(job, split, intra, cross, partial);
        return;
      }
      case Collective::broadcast: hierarchical_broadcast(job, split, intra, cross); return;
      case Collective::reduce_scatter:
      case Collective::all_gather: break;  // (excluded above)
    }
    return;
  }
  host::Transport transport(context.comm, context.rank, context.size, deadline, info, *context.workspace,
                            context.landing);
  // Flat over shared memory only happens on a one-node job, whose node
  // communicator orders ranks like `comm`.
  host::LevelSlot slot;
  plan::Level& flat = algorithm.make_level(algorithm, transport, segment, slot);
  if (check_rides_along) transport.set_check(check);
  const std::size_t whole = whole_bytes(collective, job, context.size);
  run_flat(collective, flat, job, context.rank, context.size,
           whole ? context.workspace->get(kDriverSlot, whole) : nullptr);
}

void run_host(Collective collective, const plan::Choice& choice, const plan::Job& job, std::size_t contributors,
              const HostContext& context, const util::Deadline& deadline, const plan::CallInfo& info,
              const plan::Fingerprint* check) {
  if (plan::reduces(collective) && context.numerics.exact_sum(job.dtype, job.op))
    return run_exact(collective, choice, job, contributors, context, deadline, info, check);
  if (plan::reduces(collective) && context.numerics.widens(job.dtype, job.op))
    return run_widened(collective, choice, job, contributors, context, deadline, info, check);
  plan::Job level_job = job;
  if (level_job.op == ReduceOp::mean) level_job.op = ReduceOp::sum;
  run_host_plan(collective, choice, level_job, context, deadline, info, check);
  finish_host(job.op, level_job, plan::holds_reduction(collective, context.rank, job.root), contributors);
}

namespace {

// The levels of `choice` over `level_job` (its op already a level op: mean
// runs as sum), then the finish stage with the caller's `op` on the ranks
// that hold a result.
void run_levels_and_finish(Collective collective, const plan::Choice& choice, const plan::Job& level_job, ReduceOp op,
                           std::size_t contributors, const GpuContext& context) {
  run_gpu_levels(collective, choice, level_job, context);
  finish_gpu(op, level_job, plan::holds_reduction(collective, context.rank, level_job.root), contributors,
             *context.backend, gpu::kHome);
}

}  // namespace

// The end of a call's work in its mode: the wait, or the fence.
gpu::Fence end_call(gpu::Backend& backend, gpu::Mode mode) {
  if (mode != gpu::Mode::blocking) return backend.enqueued();
  backend.complete();
  return {};
}

gpu::Fence run_gpu(Collective collective, const plan::Choice& choice, const plan::Job& job, std::size_t contributors,
                   const GpuContext& context, const gpu::CallContext& call) {
  refuse_forbidden(choice, context, call.info);
  gpu::Backend& backend = *context.backend;
  CallScope scope(backend, call);
  gpu::Fence done;
  breaking_backend(backend, [&] {
    plan::Job level_job = job;
    if (level_job.op == ReduceOp::mean) level_job.op = ReduceOp::sum;
    run_levels_and_finish(collective, choice, level_job, job.op, contributors, context);
    done = end_call(backend, call.mode);
  });
  return done;
}

gpu::Fence run_gpu_pack(Collective collective, const plan::Choice& choice, const gpu::GpuPack& pack,
                        const plan::Job& proto, std::size_t contributors, const GpuContext& context,
                        const gpu::CallContext& call) {
  refuse_forbidden(choice, context, call.info);
  gpu::Backend& backend = *context.backend;
  CallScope scope(backend, call);
  gpu::Fence done;
  breaking_backend(backend, [&] {
    const gpu::Packed packed = backend.pack(pack);
    plan::Job job = proto;
    job.in = job.out = packed.home;
    job.count = packed.count;
    job.dtype = pack.dtype;
    if (job.op == ReduceOp::mean) job.op = ReduceOp::sum;
    const std::size_t replicas = packed.data.size();
    const plan::ReplicaPath path = plan::replica_path({replicas, collective, &choice, job.op, job.dtype},
                                                      [&] { return backend.replica_ranks_usable(packed); });
    if (path == plan::ReplicaPath::replica_ranks) {
      backend.replica_all_reduce(packed, job.op);
      for (std::size_t r = 0; r < replicas; ++r) {
        plan::Job replica = job;
        replica.in = replica.out = packed.data[r];
        finish_gpu(proto.op, replica, true, contributors, backend, r);
      }
    } else {
      // The home holds what this rank contributes: every replica reduced,
      // or, for a broadcast, replica 0 (the root's source).
      backend.combine(packed, job.op, collective == Collective::broadcast ? 1 : replicas);
      run_levels_and_finish(collective, choice, job, proto.op, contributors, context);
      if (pack.lands_here) backend.spread(packed);
    }
    if (pack.lands_here) backend.unpack(packed);
    done = end_call(backend, call.mode);
  });
  return done;
}

}  // namespace strata::exec
