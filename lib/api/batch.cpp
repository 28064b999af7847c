// The batch path: packs (plan/packing) executed one collective each, with
// local replicas pre-reduced into a staging buffer. Staging memory is one
// grow-only buffer of the largest pack, reused across calls.
#include <fmt/format.h>

#include <cstring>
#include <limits>

#include "api/session.hpp"
#include "exec/execute.hpp"
#include "exec/host_pack.hpp"
#include "plan/packing.hpp"
#include "util/log.hpp"
#include "util/trace.hpp"
#include "util/where.hpp"

namespace strata::api {
namespace {

// Ends a pack's span with what it was and what ran it (tracing on only).
void end_pack_span(util::trace::Span& span, std::size_t index, const plan::Pack& pack, std::string_view algorithm) {
  if (!span.active()) return;
  span.args()
      .add("pack", std::uint64_t(index))
      .add("bytes", std::uint64_t(pack.bytes()))
      .add("dtype", to_string(pack.dtype))
      .add("pieces", std::uint64_t(pack.pieces.size()))
      .add("algorithm", algorithm);
  span.end();
}

// Calls the caller's on_pack_done(index) inside its own span.
void pack_done(const std::function<void(std::size_t)>* on_pack_done, std::size_t index) {
  if (!on_pack_done || !*on_pack_done) return;
  util::trace::Span span("on_pack_done");
  if (span.active()) span.args().add("pack", std::uint64_t(index));
  (*on_pack_done)(index);
}

std::vector<plan::TensorShape> shapes_of(const std::vector<std::vector<Tensor>>& batch) {
  std::vector<plan::TensorShape> shapes;
  shapes.reserve(batch.size());
  for (const auto& replicas : batch) shapes.push_back({replicas.front().count, replicas.front().dtype});
  return shapes;
}

}  // namespace

std::size_t Session::bytes_per_pack(const BatchCall& call) const {
  if (call.options->bytes_per_pack > 0) return static_cast<std::size_t>(call.options->bytes_per_pack);
  const bool cuda = !call.batch->empty() && call.batch->front().front().memory == Memory::cuda;
  // Automatic packing on GPUs: each dtype in one pack, one collective for
  // the batch (TF's NcclAllReduce default, num_packs = 1): a kernel packs
  // and unpacks at device bandwidth, while every NCCL call costs tens of us.
  return cuda ? std::numeric_limits<std::size_t>::max() : plan::automatic_bytes_per_pack(split_.node_count);
}

// At STRATA_DEBUG=INFO, prints the plan of a batch whose shape (tensors,
// packing, bytes_per_pack) differs from the last one printed: once for a
// training loop, again when its batch changes.
void Session::log_batch_plan(const BatchCall& call) {
  if (util::log_level() < util::LogLevel::info) return;
  std::uint64_t shape = 1469598103934665603ull;  // FNV-1a over the plan's inputs
  auto mix = [&shape](std::uint64_t v) { shape = (shape ^ v) * 1099511628211ull; };
  for (const auto& replicas : *call.batch) mix(replicas.front().count), mix(std::uint64_t(replicas.front().dtype));
  mix(std::uint64_t(call.packing.num_packs)), mix(std::uint64_t(call.packing.agg_small_grads_max_bytes));
  mix(std::uint64_t(call.packing.agg_small_grads_max_group)), mix(std::uint64_t(call.options->bytes_per_pack));
  mix(std::uint64_t(call.collective)), mix(call.batch->empty() ? 0 : call.batch->front().size());
  if (shape == last_logged_batch_) return;
  last_logged_batch_ = shape;
  std::vector<Tensor> tensors;
  for (const auto& replicas : *call.batch) tensors.push_back(replicas.front());
  util::log(util::LogLevel::info, "{} of {} tensors x {} replica(s): {}", to_string(call.collective), tensors.size(),
            call.batch->empty() ? 0 : call.batch->front().size(),
            plan_batch(tensors, call.packing, *call.options, call.spec, call.collective).to_string());
}

void Session::run_batch(const BatchCall& call) {
  requests_.exclusive([&] { run_batch_started(call); });
}

void Session::run_batch_started(const BatchCall& call) {
  traced(call, [&] { run_batch_call(call); });
}

bool Session::thread_may_run(const BatchCall& call) const {
  const bool cuda = !call.batch->empty() && call.batch->front().front().memory == Memory::cuda;
  if (cuda) return false;  // the GPU backend's setup and staging use MPI
  std::size_t bytes = 0;
  for (const auto& replicas : *call.batch) bytes += replicas.front().bytes();
  return thread_may_run_host(bytes, [&] {
    for (const plan::Pack& pack : plan::make_packs(shapes_of(*call.batch), call.packing, bytes_per_pack(call)))
      if (!choose(call.collective, pack.bytes(), Memory::host, call.options->implementation, call.spec).shared_memory)
        return false;
    return true;
  });
}

void Session::run_batch_call(const BatchCall& call) {
  health_.ensure_usable();
  log_batch_plan(call);
  const util::Deadline deadline(call.options->timeout_seconds);
  util::IdleWorkScope answering_scope(answering());
  ++sequence_;  // one number per call, as for single calls; the packs run under it
  try {
    // A batch is checked once, as a whole, before its first pack.
    current_ = {call.name(), sequence_, 0, "call check"};
    if (check_calls_) verify(fingerprints_.of(call, sequence_), deadline, current_.collective);
    if (!call.batch->empty() && call.batch->front().front().memory == Memory::cuda)
      run_batch_gpu(call, deadline);
    else
      run_batch_host(call, deadline);
  } catch (const DeadlineExceeded&) {
    blame_missing_ranks(deadline);
  }
  landing_.reset();
}

void Session::run_batch_host(const BatchCall& call, const util::Deadline& deadline) {
  const std::vector<std::vector<Tensor>>& batch = *call.batch;
  const std::vector<plan::Pack> packs = plan::make_packs(shapes_of(batch), call.packing, bytes_per_pack(call));
  util::log(util::LogLevel::trace, "batch of {} tensors: {}", batch.size(), plan::describe(packs));

  const std::size_t replicas = batch.empty() ? 1 : batch.front().size();
  const bool broadcast = call.collective == Collective::broadcast;
  const bool source = broadcast && rank_ == call.root;
  // Broadcast: replica 0 of the root is the only input; a rank whose
  // tensors must not change (not a destination) runs in staging.
  const bool in_callers_memory = replicas == 1 && (call.lands_here || source || !broadcast);
  const ReduceOp local_op = call.op == ReduceOp::mean ? ReduceOp::sum : call.op;
  const std::size_t contributors = broadcast ? 1 : static_cast<std::size_t>(size_) * replicas;

  for (std::size_t p = 0; p < packs.size(); ++p) {
    const plan::Pack& pack = packs[p];
    util::trace::Span pack_span("pack");
    Call one{call.collective, {}, Memory::host, -1, contributors, call.options, call.spec, call.name()};
    one.job.count = pack.count;
    one.job.dtype = pack.dtype;
    one.job.op = call.op;
    one.job.root = call.root;
    if (in_callers_memory && pack.pieces.size() == 1) {
      // One contiguous piece of one tensor: run it where it lies.
      const plan::PackPiece& piece = pack.pieces.front();
      one.job.in = one.job.out = exec::element_at(batch[piece.tensor][0], piece.offset);
      run_host(one, deadline, /*check=*/false);
    } else {
      std::byte* stage = staging_.get(0, pack.bytes());
      exec::gather_pack(pack, batch, /*combine=*/!broadcast, local_op, stage);
      one.job.in = one.job.out = stage;
      run_host(one, deadline, /*check=*/false);
      if (call.lands_here) exec::spread_pack(pack, batch, stage);
    }
    end_pack_span(pack_span, p, pack, plans_.described());
    pack_done(call.on_pack_done, p);
  }
}

void Session::run_batch_gpu(const BatchCall& call, const util::Deadline& deadline) {
  const std::vector<std::vector<Tensor>>& batch = *call.batch;
  const std::size_t replicas = batch.front().size();
  // Replica r of every tensor lives on one device (its pack is packed there).
  std::vector<int> devices;
  for (const Tensor& t : batch.front()) devices.push_back(t.device);
  for (std::size_t k = 0; k < batch.size(); ++k)
    for (std::size_t r = 0; r < replicas; ++r)
      if (batch[k][r].device != devices[r])
        throw InvalidArgument(
            util::located(fmt::format("tensor {} replica {} is on CUDA device {} but tensor 0 replica {} is on "
                                      "device {}; each replica's tensors must share one device",
                                      k, r, batch[k][r].device, r, devices[r])));

  const std::vector<plan::Pack> packs = plan::make_packs(shapes_of(batch), call.packing, bytes_per_pack(call));
  util::log(util::LogLevel::trace, "CUDA batch of {} tensors x {} replicas: {}", batch.size(), replicas,
            plan::describe(packs));

  gpu_backend();
  const bool broadcast = call.collective == Collective::broadcast;
  const std::size_t contributors = broadcast ? 1 : static_cast<std::size_t>(size_) * replicas;
  const std::string_view collective_name = call.name();
  for (std::size_t p = 0; p < packs.size(); ++p) {
    const plan::Pack& pack = packs[p];
    gpu::GpuPack job;
    job.dtype = pack.dtype;
    job.lands_here = call.lands_here;
    job.replicas.resize(replicas);
    for (std::size_t r = 0; r < replicas; ++r) {
      job.replicas[r].device = devices[r];
      for (const plan::PackPiece& piece : pack.pieces)
        job.replicas[r].pieces.push_back({exec::element_at(batch[piece.tensor][r], piece.offset), piece.count});
    }
    const plan::Choice& choice =
        plans_.cached(call.collective, pack.bytes(), Memory::cuda, call.options->implementation, call.spec);
    plan::Job proto;
    proto.dtype = pack.dtype;
    proto.op = call.op;  // mean stays: exec runs sum and finishes
    proto.root = call.root;
    proto.shards = choice.shards;
    proto.chunk_bytes = config_.chunk_bytes;
    current_ = {collective_name, sequence_, pack.bytes(), plans_.described()};
    const gpu::CallContext context{&deadline, current_, call.options->stream, devices, /*packed=*/true};
    util::trace::Span pack_span("pack");
    breaking_on_failure(
        [&] { exec::run_gpu_pack(call.collective, choice, job, proto, contributors, gpu_context(), context); });
    end_pack_span(pack_span, p, pack, plans_.described());
    pack_done(call.on_pack_done, p);
  }
}

Plan Session::plan_batch(std::span<const Tensor> tensors, const PackingOptions& packing,
                         const CommunicationOptions& options, const plan::Spec* spec, Collective collective) const {
  const std::vector<std::vector<Tensor>> batch = [&] {
    std::vector<std::vector<Tensor>> b;
    for (const Tensor& t : tensors) b.push_back({t});
    return b;
  }();
  BatchCall call;
  call.batch = &batch;
  call.packing = packing;
  call.options = &options;
  Plan result;
  result.collective = collective;
  result.memory = tensors.empty() ? Memory::host : tensors.front().memory;
  for (const plan::Pack& pack : plan::make_packs(shapes_of(batch), packing, bytes_per_pack(call))) {
    PlannedPack planned{pack.dtype, pack.count, pack.bytes(), {}, {}};
    for (const plan::PackPiece& piece : pack.pieces)
      if (planned.tensors.empty() || planned.tensors.back() != piece.tensor) planned.tensors.push_back(piece.tensor);
    planned.algorithm =
        choose(collective, pack.bytes(), result.memory, options.implementation, spec).describe();
    result.packs.push_back(std::move(planned));
  }
  return result;
}

}  // namespace strata::api
