// The batch path: packs (plan/packing) executed one collective each, with
// local replicas pre-reduced into a staging buffer. Staging memory is one
// grow-only buffer of the largest pack, reused across calls.
#include <fmt/format.h>

#include <cstring>
#include <limits>

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
    run_batch_gpu(collective, batch, op, root, collective == Collective::all_reduce || rank == root, packing, options,
                  spec_override, on_pack_done);
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
                                       ReduceOp op, int root, bool lands_here, const PackingOptions& packing,
                                       const CommunicationOptions& options, const plan::Spec* spec_override,
                                       const std::function<void(std::size_t)>& on_pack_done) {
  const core::Deadline deadline(options.timeout_seconds);
  const std::size_t replicas = batch.front().size();
  // Replica r of every tensor lives on one device (its pack is packed there).
  std::vector<int> devices;
  for (const Tensor& t : batch.front()) devices.push_back(t.device);
  for (std::size_t k = 0; k < batch.size(); ++k)
    for (std::size_t r = 0; r < replicas; ++r)
      if (batch[k][r].device != devices[r])
        throw InvalidArgument(fmt::format("tensor {} replica {} is on CUDA device {} but tensor 0 replica {} is on "
                                          "device {}; each replica's tensors must share one device",
                                          k, r, batch[k][r].device, r, devices[r]));

  std::vector<plan::TensorShape> shapes;
  for (const auto& copies : batch) shapes.push_back({copies.front().count, copies.front().dtype});
  // Automatic packing on GPUs: each dtype in one pack, one collective for
  // the batch (TF's NcclAllReduce default, num_packs = 1): a kernel packs
  // and unpacks at device bandwidth, while every NCCL call costs tens of us.
  const std::size_t bytes_per_pack = options.bytes_per_pack > 0 ? static_cast<std::size_t>(options.bytes_per_pack)
                                                                 : std::numeric_limits<std::size_t>::max();
  const std::vector<plan::Pack> packs = plan::make_packs(shapes, packing, bytes_per_pack);
  core::log(core::LogLevel::trace, "CUDA batch of {} tensors x {} replicas: {}", batch.size(), replicas,
            plan::describe(packs));

  gpu::Backend& backend = gpu_backend(deadline, to_string(collective));
  for (std::size_t p = 0; p < packs.size(); ++p) {
    const plan::Pack& pack = packs[p];
    gpu::GpuPack job;
    job.collective = collective;
    job.lands_here = lands_here;
    job.replicas.resize(replicas);
    for (std::size_t r = 0; r < replicas; ++r) {
      job.replicas[r].device = devices[r];
      for (const plan::PackPiece& piece : pack.pieces)
        job.replicas[r].pieces.push_back({element_at(batch[piece.tensor][r], piece.offset), piece.count});
    }
    ++sequence;
    const plan::SpecEntry entry = gpu_entry(spec_override ? *spec_override : spec, pack.bytes(), options.implementation);
    gpu::GpuJob proto;
    proto.count = pack.count;
    proto.dtype = pack.dtype;
    proto.op = op;
    proto.contributors = static_cast<std::size_t>(size) * replicas;
    proto.root = root;
    proto.device = devices[0];
    proto.algorithm = entry.algorithm;
    proto.shards = entry.shards;
    proto.chunk_bytes = config.chunk_bytes;
    proto.sequence = sequence;
    breaking_on_failure([&] { backend.run_pack(job, proto, deadline); });
    if (on_pack_done) on_pack_done(p);
  }
}

}  // namespace strata
