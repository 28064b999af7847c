// The batch path: packs (plan/packing) executed one collective each, with
// local replicas pre-reduced into a staging buffer on host memory, or
// packed on every replica's device for CUDA memory. Host staging is one
// grow-only buffer of the largest pack, reused across calls (slot 0), and
// a CUDA batch through host memory mirrors its tensors there (slot 1).
#include <fmt/format.h>

#include <limits>

#include "exec/executor.hpp"
#include "exec/host_pack.hpp"
#include "exec/registry.hpp"
#include "exec/through_host.hpp"
#include "gpu/plugin.hpp"
#include "plan/packing.hpp"
#include "util/log.hpp"
#include "util/trace.hpp"
#include "util/where.hpp"

namespace strata::exec {
namespace {

// The host staging slot of a CUDA batch's mirror (the packs use slot 0).
constexpr std::size_t kMirrorSlot = 1;

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

bool on_cuda(const BatchCall& call) {
  return !call.batch->empty() && call.batch->front().front().memory == Memory::cuda;
}

}  // namespace

std::vector<plan::TensorShape> shapes_of(const std::vector<std::vector<Tensor>>& batch) {
  std::vector<plan::TensorShape> shapes;
  shapes.reserve(batch.size());
  for (const auto& replicas : batch) shapes.push_back({replicas.front().count, replicas.front().dtype});
  return shapes;
}

std::size_t Executor::bytes_per_pack(const BatchCall& call) const {
  if (call.options->bytes_per_pack > 0) return static_cast<std::size_t>(call.options->bytes_per_pack);
  // Automatic packing on GPUs: each dtype in one pack, one collective for
  // the batch (TF's NcclAllReduce default, num_packs = 1): a kernel packs
  // and unpacks at device bandwidth, while every NCCL call costs tens of us.
  return on_cuda(call) ? std::numeric_limits<std::size_t>::max()
                       : plan::automatic_bytes_per_pack(split_->node_count);
}

bool Executor::thread_may_run(const BatchCall& call) const {
  if (on_cuda(call)) return mpi_any_thread_;  // the GPU backend's setup and host stages use MPI
  std::size_t bytes = 0;
  for (const auto& replicas : *call.batch) bytes += replicas.front().bytes();
  if (bytes == 0) return false;
  bool every_plan_shared_memory = true;
  try {
    for (const plan::Pack& pack : plan::make_packs(shapes_of(*call.batch), call.packing, bytes_per_pack(call)))
      every_plan_shared_memory &=
          plans_.choose(call.collective, pack.bytes(), Memory::host, call.options->implementation, call.spec,
                        {call.op, pack.dtype})
              .shared_memory;
  } catch (const Error&) {
    return false;  // (a plan that cannot be made fails when the request runs, on the caller's thread)
  }
  return thread_may_run_host(bytes, every_plan_shared_memory);
}

std::vector<plan::Choice> Executor::gpu_choices(const BatchCall& call) const {
  // A batch through host memory (exec/through_host.hpp) runs host plans.
  const Memory plan_memory = through_host(call) ? Memory::host : Memory::cuda;
  std::vector<plan::Choice> choices;
  for (const plan::Pack& pack : plan::make_packs(shapes_of(*call.batch), call.packing, bytes_per_pack(call)))
    choices.push_back(
        plans_.choose(call.collective, pack.bytes(), plan_memory, call.options->implementation, call.spec,
                      {call.op, pack.dtype}));
  return choices;
}

bool Executor::through_host(const BatchCall& call) const {
  for (const std::vector<Tensor>& replicas : *call.batch)
    if (needs_host_numerics(host_.context().numerics, call.collective, replicas.front().dtype, call.op)) return true;
  return false;
}

void Executor::run_batch_gpu_through_host(const BatchCall& call, const Ticket& ticket,
                                          const util::Deadline& deadline) {
  const std::vector<std::vector<Tensor>>& batch = *call.batch;
  std::vector<int> devices;
  for (const Tensor& t : batch.front()) devices.push_back(t.device);
  std::size_t total = 0;
  for (const std::vector<Tensor>& replicas : batch)
    for (const Tensor& t : replicas) total += t.bytes();
  const gpu::Mode mode = mode_of(call.options->stream, call.request, call.ordering, /*host_stages=*/true);
  const gpu::CallContext context = gpu_call(deadline, call.options->stream, devices, /*packed=*/true, mode, call.ordering);
  std::size_t packs = 0;
  HostStaging staging(*gpu_context().backend, context);
  staging.run([&] {
    // The batch's mirror in host memory, every tensor of every replica.
    std::byte* mirror_bytes = host_.staging().get(kMirrorSlot, total);
    std::vector<std::vector<Tensor>> mirror(batch.size());
    for (std::size_t k = 0, offset = 0; k < batch.size(); ++k)
      for (const Tensor& t : batch[k]) {
        Tensor copy = t;
        copy.data = mirror_bytes + offset;
        copy.memory = Memory::host;
        copy.device = -1;
        staging.download(copy.data, t.data, t.bytes());
        mirror[k].push_back(copy);
        offset += t.bytes();
      }
    // The packs' on_pack_done fire below, once their results are back in
    // the caller's tensors.
    BatchCall host_call = call;
    host_call.batch = &mirror;
    host_call.on_pack_done = nullptr;
    packs = run_batch_host(host_call, {ticket.sequence, nullptr}, deadline);  // the batch was checked as a whole
    if (call.lands_here && (call.collective != Collective::reduce || rank_ == call.root))
      for (std::size_t k = 0; k < batch.size(); ++k)
        for (std::size_t r = 0; r < batch[k].size(); ++r)
          staging.upload(batch[k][r].data, mirror[k][r].data, batch[k][r].bytes());
  });
  for (std::size_t p = 0; p < packs; ++p) pack_done(call.on_pack_done, p);
}

std::optional<InvalidArgument> Executor::refusal(const BatchCall& call) {
  if (!on_cuda(call)) return std::nullopt;
  void* stream = call.options->stream;
  const gpu::Capture capture = capture_now(stream);
  if (auto refused = host_wait_in_capture(stream, capture, "batch")) return refused;
  if (!stream || capture != gpu::Capture::active) return std::nullopt;
  if (call.request)
    return InvalidArgument(util::located(
        "a request (ibatch_all_reduce) cannot be captured into a CUDA graph: its test() and wait() are host "
        "waits; use batch_all_reduce with CommunicationOptions::stream, which is captured"));
  for (const Tensor& replica : call.batch->front())
    if (call.batch->front().size() > 1 || (replica.device >= 0 && replica.device != gpu_row().device))
      return InvalidArgument(util::located(
          "a batch with replicas on several devices, or on another device than the rank's, cannot be captured "
          "into a CUDA graph (a graph holds one stream's work): capture one replica on the rank's device"));
  if (through_host(call)) return InvalidArgument(util::located(through_host_refusal()));
  if (const std::string why = capture_refusal(gpu_choices(call)); !why.empty())
    return InvalidArgument(util::located(why));
  return std::nullopt;
}

bool Executor::only_enqueues(const BatchCall& call) const {
  if (!on_cuda(call)) return false;
  for (const plan::Choice& choice : gpu_choices(call))
    if (host_stages(choice)) return false;
  return true;
}

bool Executor::hands_over(const BatchCall& call) {
  if (!on_cuda(call) || !call.options->stream || !mpi_any_thread_ || !gpu_.made()) return false;
  for (const plan::Choice& choice : gpu_choices(call))
    if (host_stages(choice)) return true;
  return false;
}

Ordering Executor::order_now(const BatchCall& call, bool gate) {
  Ordering ordering;
  gpu::Backend* backend = gpu_.made();
  if (!backend || !on_cuda(call)) return ordering;
  if (call.options->stream) {
    ordering.ready.push_back(backend->mark(call.options->stream, gpu_row().device));
  } else {
    // The legacy default stream of every replica's device, in replica order.
    for (const Tensor& replica : call.batch->front())
      ordering.ready.push_back(backend->mark(nullptr, replica.device >= 0 ? replica.device : gpu_row().device));
  }
  if (gate) ordering.gate = backend->hold(call.options->stream);
  return ordering;
}

std::shared_ptr<Flight> Executor::run_batch(const BatchCall& call, const Ticket& ticket) {
  // A batch is checked once, as a whole, before its first pack.
  return framed(call.options->timeout_seconds, ticket.check, call.name(),
                [&](const util::Deadline& deadline) -> std::shared_ptr<Flight> {
                  if (on_cuda(call)) return run_batch_gpu(call, ticket, deadline);
                  run_batch_host(call, ticket, deadline);
                  return nullptr;
                });
}

std::size_t Executor::run_batch_host(const BatchCall& call, const Ticket& ticket, const util::Deadline& deadline) {
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
  const Ticket unchecked{ticket.sequence, nullptr};  // the batch was checked as a whole

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
      one.job.in = one.job.out = element_at(batch[piece.tensor][0], piece.offset);
      run_host(one, unchecked, deadline);
    } else {
      std::byte* stage = host_.staging().get(0, pack.bytes());
      gather_pack(pack, batch, /*combine=*/!broadcast, local_op, stage);
      one.job.in = one.job.out = stage;
      run_host(one, unchecked, deadline);
      if (call.lands_here) spread_pack(pack, batch, stage);
    }
    end_pack_span(pack_span, p, pack, plans_.described());
    pack_done(call.on_pack_done, p);
  }
  return packs.size();
}

std::shared_ptr<Flight> Executor::run_batch_gpu(const BatchCall& call, const Ticket& ticket,
                                                const util::Deadline& deadline) {
  const std::vector<std::vector<Tensor>>& batch = *call.batch;
  const std::size_t replicas = batch.front().size();
  std::vector<int> devices;
  for (const Tensor& t : batch.front()) devices.push_back(t.device);
  const std::vector<plan::Pack> packs = plan::make_packs(shapes_of(batch), call.packing, bytes_per_pack(call));
  util::log(util::LogLevel::trace, "CUDA batch of {} tensors x {} replicas: {}", batch.size(), replicas,
            plan::describe(packs));

  gpu_backend();
  if (through_host(call)) {
    if (replicas > 1)
      throw Unavailable(util::located(fmt::format(
          "{} of CUDA tensors with {} replicas per rank: {} runs CUDA batches through host memory with one replica "
          "per rank only so far (docs/REPRODUCIBILITY.md); combine the replicas first, or use reproducible mode "
          "order on f32 or f64",
          call.name(), replicas,
          host_.context().numerics.exact_sum(batch.front().front().dtype, call.op) ? "reproducible mode exact"
                                                                                    : "accumulating 16-bit sums in f32")));
    run_batch_gpu_through_host(call, ticket, deadline);
    return nullptr;
  }
  const bool broadcast = call.collective == Collective::broadcast;
  const std::size_t contributors = broadcast ? 1 : static_cast<std::size_t>(size_) * replicas;
  const std::string_view collective_name = call.name();
  // One mode for the whole batch: packs with host stages make every pack
  // run blocking (a pack must not overtake the one before it).
  bool any_host_stages = false;
  for (const plan::Pack& pack : packs)
    any_host_stages |= host_stages(
        plans_.choose(call.collective, pack.bytes(), Memory::cuda, call.options->implementation, call.spec,
                      {call.op, pack.dtype}));
  const gpu::Mode mode = mode_of(call.options->stream, call.request, call.ordering, any_host_stages);
  std::shared_ptr<Flight> flight;
  for (std::size_t p = 0; p < packs.size(); ++p) {
    const plan::Pack& pack = packs[p];
    gpu::GpuPack job;
    job.dtype = pack.dtype;
    job.lands_here = call.lands_here;
    job.replicas.resize(replicas);
    for (std::size_t r = 0; r < replicas; ++r) {
      job.replicas[r].device = devices[r];
      for (const plan::PackPiece& piece : pack.pieces)
        job.replicas[r].pieces.push_back({element_at(batch[piece.tensor][r], piece.offset), piece.count});
    }
    const plan::Choice& choice =
        plans_.cached(call.collective, pack.bytes(), Memory::cuda, call.options->implementation, call.spec,
                      {call.op, pack.dtype});
    plan::Job proto;
    proto.dtype = pack.dtype;
    proto.op = call.op;  // mean stays: exec runs sum and finishes
    proto.root = call.root;
    proto.shards = choice.shards;
    proto.chunk_bytes = host_.chunk_bytes();
    current_ = {collective_name, ticket.sequence, pack.bytes(), plans_.described()};
    // Only the first pack orders after the producer; the others follow it
    // on the backend's streams (a held producer would never let them by).
    gpu::CallContext context = gpu_call(deadline, call.options->stream, devices, /*packed=*/true, mode, call.ordering);
    context.after_producer = p == 0;
    util::trace::Span pack_span("pack");
    gpu::Fence done;
    breaking_on_failure(
        [&] { done = run_gpu_pack(call.collective, choice, job, proto, contributors, gpu_context(), context); });
    if (done.valid()) flight = flights_->add(done, deadline, current_);
    end_pack_span(pack_span, p, pack, plans_.described());
    pack_done(call.on_pack_done, p);
  }
  return flight;
}

}  // namespace strata::exec
