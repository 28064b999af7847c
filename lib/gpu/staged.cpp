// Host staging: the data is cut into chunks that cycle through a ring of
// kRing pinned buffers: the first kRing device-to-host copies are queued at
// once, each chunk's host collective starts as soon as its copy landed,
// then its host-to-device copy and the next chunk's device-to-host copy
// into the same buffer are queued behind it, so copies of other chunks
// overlap the MPI transfers of the current one. The pinned memory is kRing
// chunks (16 MiB by default), allocated once and reused, never the size of
// the tensor. Every rank cuts the same chunks, so the per-chunk collectives
// match up.
#include "gpu/staged.hpp"

#include <algorithm>
#include <memory>
#include <vector>

#include "gpu/group_level.hpp"
#include "gpu/pinned_all_gather.hpp"
#include "host/algorithm.hpp"
#include "host/transport.hpp"

namespace strata::gpu {
namespace {

constexpr std::size_t kDefaultChunkBytes = 4u << 20;  // big enough to amortise a collective's latency
constexpr std::size_t kRing = 4;                       // chunks in flight
constexpr std::size_t kHostChunkBytes = 256 * 1024;    // the host algorithms' own pipeline inside a chunk

// All-reduce, reduce or broadcast over `level`.
void run_collective(plan::Level& level, Collective collective, const plan::Job& job) {
  switch (collective) {
    case Collective::all_reduce: level.all_reduce(job); return;
    case Collective::reduce: level.reduce(job); return;
    case Collective::broadcast: level.broadcast(job); return;
    case Collective::reduce_scatter:
    case Collective::all_gather: break;  // the staged level runs these as all-reduce and pinned_all_gather
  }
}

// `collective` of host algorithm `algorithm` on device data over `comm`,
// where this rank is `rank` of `size` (the level asked MPI, checked, once).
void staged(Backend& backend, MPI_Comm comm, int rank, int size, Collective collective,
            const host::Algorithm& algorithm, const plan::Job& job) {
  if (job.count == 0) return;
  const bool is_root = rank == job.root;
  // Who copies down (contributes) and who copies the result back up.
  const bool download = collective != Collective::broadcast || is_root;
  const bool receive = collective == Collective::all_reduce ? true
                       : collective == Collective::reduce   ? is_root
                                                            : !is_root;

  const std::size_t element = dtype_size(job.dtype);
  const std::size_t wanted = std::max(job.chunk_bytes, kDefaultChunkBytes);
  const std::size_t per_chunk = std::min(job.count, std::max<std::size_t>(1, wanted / element));
  const std::size_t chunks = (job.count + per_chunk - 1) / per_chunk;
  const auto* src = static_cast<const std::byte*>(collective == Collective::broadcast ? job.out : job.in);
  auto* dst = static_cast<std::byte*>(job.out);
  const auto buffer = [&](std::size_t c) {
    return static_cast<std::byte*>(backend.staging(c % kRing, per_chunk * element));
  };
  const auto first_of = [&](std::size_t c) { return c * per_chunk; };
  const auto count_of = [&](std::size_t c) { return std::min(per_chunk, job.count - first_of(c)); };
  // Event c % kRing: the stream's last use of that buffer before chunk c's
  // host step may touch it (chunk c's download, or chunk c - kRing's upload).
  std::vector<bool> armed(kRing, false);
  const auto download_chunk = [&](std::size_t c) {
    backend.copy(buffer(c), src + first_of(c) * element, count_of(c) * element, Copy::device_to_host);
    backend.record(c % kRing);
    armed[c % kRing] = true;
  };

  if (download)
    for (std::size_t c = 0; c < std::min(chunks, kRing); ++c) download_chunk(c);
  for (std::size_t c = 0; c < chunks; ++c) {
    if (armed[c % kRing]) backend.wait_for(c % kRing);
    armed[c % kRing] = false;
    host::Transport t(comm, rank, size, backend.deadline(), backend.info(), backend.workspace());
    plan::Job chunk;
    chunk.in = chunk.out = buffer(c);
    chunk.count = count_of(c);
    chunk.dtype = job.dtype;
    chunk.op = job.op;
    chunk.root = job.root;
    chunk.shards = job.shards;
    chunk.chunk_bytes = kHostChunkBytes;
    host::LevelSlot slot;
    plan::Level& level = algorithm.make_level(algorithm, t, nullptr, slot);
    run_collective(level, collective, chunk);  // the planner checked that the algorithm serves it
    if (receive && dst) {
      backend.copy(dst + first_of(c) * element, buffer(c), count_of(c) * element, Copy::host_to_device);
      if (!download) {  // the host fills this buffer again for chunk c + kRing
        backend.record(c % kRing);
        armed[c % kRing] = true;
      }
    }
    // Queued behind this chunk's upload on the same stream, so it cannot
    // overwrite the buffer before the upload read it.
    if (download && c + kRing < chunks) download_chunk(c + kRing);
  }
  backend.wait();
}

class StagedLevel final : public GroupLevel {
 public:
  StagedLevel(Backend& backend, const host::Algorithm& algorithm, plan::Group group)
      : GroupLevel(backend, group), algorithm_(algorithm) {}

  void reduce_scatter(const plan::Job& job, int owners) override {
    (void)owners;  // every member ends with the whole reduction, a superset of its slice
    if (size_ == 1) return copy(job);
    plan::Job whole = job;
    whole.shards = 1;
    staged(backend_, mpi_, rank_, size_, Collective::all_reduce, algorithm_, whole);
  }
  void all_gather(const plan::Job& job, int owners) override {
    if (size_ > 1) pinned_all_gather(backend_, mpi_, job, owners);
  }
  void all_reduce(const plan::Job& job) override { run(Collective::all_reduce, job); }
  void reduce(const plan::Job& job) override { run(Collective::reduce, job); }
  void broadcast(const plan::Job& job) override { run(Collective::broadcast, job); }

 private:
  void run(Collective collective, const plan::Job& job) {
    staged(backend_, mpi_, rank_, size_, collective, algorithm_, job);
  }

  const host::Algorithm& algorithm_;
};

}  // namespace

std::unique_ptr<plan::Level> make_staged_level(Backend& backend, const host::Algorithm& algorithm,
                                               plan::Group group) {
  return std::make_unique<StagedLevel>(backend, algorithm, group);
}

}  // namespace strata::gpu
