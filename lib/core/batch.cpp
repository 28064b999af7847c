// The batch path: packs (plan/packing) executed one collective each, with
// local replicas pre-reduced into a staging buffer. Staging memory is one
// grow-only buffer of the largest pack, reused across calls.
#include <fmt/format.h>

#include <cstring>

#include "core/communicator_impl.hpp"
#include "core/log.hpp"
#include "host/reduce_kernel.hpp"
#include "plan/packing.hpp"

namespace strata {
namespace {

std::byte* element_at(const Tensor& t, std::size_t offset) {
  return static_cast<std::byte*>(t.data) + offset * dtype_size(t.dtype);
}

}  // namespace

void Communicator::Impl::run_batch(plan::Collective collective, const std::vector<std::vector<Tensor>>& batch,
                                   ReduceOp op, int root, const PackingOptions& packing,
                                   const CommunicationOptions& options, const plan::Spec* spec_override,
                                   const std::function<void(std::size_t)>& on_pack_done) {
  ensure_usable();
  if (!batch.empty() && batch.front().front().memory == Memory::cuda) {
    run_batch_gpu(collective, batch, op, root, options, spec_override, on_pack_done);
    return;
  }
  std::vector<plan::TensorShape> shapes;
  for (const auto& replicas : batch) shapes.push_back({replicas.front().count, replicas.front().dtype});
  const std::size_t bytes_per_pack = options.bytes_per_pack > 0 ? static_cast<std::size_t>(options.bytes_per_pack)
                                                                 : plan::automatic_bytes_per_pack(split.node_count);
  const std::vector<plan::Pack> packs = plan::make_packs(shapes, packing, bytes_per_pack);
  core::log(core::LogLevel::trace, "batch of {} tensors: {}", batch.size(), plan::describe(packs));

  const std::size_t replicas = batch.empty() ? 1 : batch.front().size();
  const std::size_t contributors = static_cast<std::size_t>(size) * replicas;
  const bool lands_here = collective == plan::Collective::all_reduce || rank == root;
  const ReduceOp local_op = op == ReduceOp::mean ? ReduceOp::sum : op;
  const core::Deadline deadline(options.timeout_seconds);

  for (std::size_t p = 0; p < packs.size(); ++p) {
    const plan::Pack& pack = packs[p];
    const std::size_t element = dtype_size(pack.dtype);
    host::Job job{nullptr, nullptr, pack.count, pack.dtype, op};
    job.root = root;
    if (replicas == 1 && pack.pieces.size() == 1) {
      // One contiguous piece of one tensor: reduce it where it lies.
      const plan::PackPiece& piece = pack.pieces.front();
      job.in = job.out = element_at(batch[piece.tensor][0], piece.offset);
      execute(collective, job, options, deadline, contributors, spec_override);
    } else {
      std::byte* stage = staging.get(0, pack.bytes());
      std::byte* cursor = stage;
      for (const plan::PackPiece& piece : pack.pieces) {
        const auto& copies = batch[piece.tensor];
        std::memcpy(cursor, element_at(copies[0], piece.offset), piece.count * element);
        // Replicas in a fixed order, so the result is deterministic.
        for (std::size_t r = 1; r < copies.size(); ++r)
          host::reduce_into(cursor, cursor, element_at(copies[r], piece.offset), piece.count, pack.dtype, local_op);
        cursor += piece.count * element;
      }
      job.in = job.out = stage;
      execute(collective, job, options, deadline, contributors, spec_override);
      if (lands_here) {
        cursor = stage;
        for (const plan::PackPiece& piece : pack.pieces) {
          for (const Tensor& copy : batch[piece.tensor])
            std::memcpy(element_at(copy, piece.offset), cursor, piece.count * element);
          cursor += piece.count * element;
        }
      }
    }
    if (on_pack_done) on_pack_done(p);
  }
}

void Communicator::Impl::run_batch_gpu(Collective collective, const std::vector<std::vector<Tensor>>& batch,
                                       ReduceOp op, int root, const CommunicationOptions& options,
                                       const plan::Spec* spec_override,
                                       const std::function<void(std::size_t)>& on_pack_done) {
  if (batch.front().size() > 1)
    throw Unavailable(fmt::format("{} CUDA replicas per rank: several GPUs per rank are not supported yet; "
                                  "run one rank per GPU",
                                  batch.front().size()));
  const core::Deadline deadline(options.timeout_seconds);
  const std::size_t contributors = static_cast<std::size_t>(size);
  if (collective == Collective::reduce) {
    for (std::size_t k = 0; k < batch.size(); ++k) {
      const Tensor& t = batch[k][0];
      host::Job job{t.data, rank == root ? t.data : nullptr, t.count, t.dtype, op};
      job.root = root;
      execute_gpu(collective, job, t.device, options, deadline, contributors, spec_override);
      if (on_pack_done) on_pack_done(k);
    }
    return;
  }
  std::vector<gpu::GpuTensor> tensors;
  std::size_t total = 0;
  for (const auto& replicas : batch) {
    tensors.push_back({replicas[0].data, replicas[0].count, replicas[0].dtype});
    total += replicas[0].bytes();
  }
  gpu::Backend& backend = gpu_backend(deadline, "batch_all_reduce");
  ++sequence;
  const plan::SpecEntry entry = gpu_entry(spec_override ? *spec_override : spec, total, options.implementation);
  gpu::GpuJob proto;
  proto.op = op;
  proto.contributors = contributors;
  proto.device = batch.front()[0].device;
  proto.algorithm = entry.algorithm;
  proto.shards = entry.shards;
  proto.chunk_bytes = config.chunk_bytes;
  proto.sequence = sequence;
  breaking_on_failure([&] { backend.batch_all_reduce(tensors, proto, deadline, on_pack_done); });
}

}  // namespace strata
