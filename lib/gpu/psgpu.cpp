// psgpu: "parameter server on GPU". Every rank sends slice s of its input to
// slice owner s over MPI (through pinned host memory, a chunk at a time:
// gpu/pinned_all_gather.hpp); the owner uploads the contributions and
// reduces them on its GPU with strata's kernel in rank order
// (deterministic), then the finished slices are all-gathered the same way.
// No NCCL communicator is needed, so it also runs when several ranks share
// one GPU. job.shards >= 2 limits the flat all-reduce's owners to that many
// ranks. No broadcast of its own: the planner runs the host default (tree)
// through pinned copies.
#include <algorithm>
#include <cstddef>

#include "gpu/algorithm.hpp"
#include "gpu/group_level.hpp"
#include "gpu/pinned_all_gather.hpp"
#include "gpu/rank_order.hpp"
#include "host/transport.hpp"
#include "strata/errors.hpp"
#include "util/slice.hpp"
#include "util/where.hpp"

namespace strata::gpu {
namespace {

// Member s < owners ends with slice s of the reduction in job.out. Round k
// of the pinned pipeline (gpu/pinned_all_gather.hpp) brings piece k of
// every owner's slice from every member to its owner, which uploads the
// contributions and reduces them in rank order; so pinned and device
// scratch stay one chunk per buffer, and every element is reduced as
// without pieces. Waits for its copies itself.
void psgpu_reduce_scatter(Backend& backend, MPI_Comm comm, const plan::Job& job, int owners) {
  host::Transport t(comm, backend.deadline(), backend.info(), backend.workspace());
  const std::size_t element = dtype_size(job.dtype);
  const int rank = t.rank(), size = t.size();
  const SlicePieces pieces(job, owners, size);
  const std::size_t piece_bytes = pieces.per_round * element;
  const bool owner = rank < owners;
  // Round k's contributions to my piece, member r's at [r * its bytes].
  auto* contributions =
      owner ? static_cast<std::byte*>(backend.device_scratch(0, piece_bytes * std::size_t(size))) : nullptr;
  PinnedRounds rounds;
  rounds.rounds = pieces.rounds;
  rounds.send_bytes = piece_bytes * std::size_t(owners);  // my piece for owner s at [s * piece_bytes]
  rounds.recv_bytes = piece_bytes * std::size_t(size);    // member r's piece at [r * its bytes]
  rounds.download = [&](std::size_t k, std::byte* send) {
    for (int s = 0; s < owners; ++s) {
      const util::Slice piece = pieces.of(s, k);
      if (s != rank && piece.count > 0)
        backend.copy(send + std::size_t(s) * piece_bytes, util::element_at(job.in, piece.offset, element),
                     piece.count * element, Copy::device_to_host);
    }
  };
  rounds.exchange = [&](std::size_t k, const std::byte* send, std::byte* recv, host::Requests& requests) {
    const util::Slice mine = owner ? pieces.of(rank, k) : util::Slice{};
    if (mine.count > 0)
      for (int r = 0; r < size; ++r)
        if (r != rank) t.irecv(requests, recv + std::size_t(r) * mine.count * element, mine.count * element, r);
    for (int s = 0; s < owners; ++s) {
      const util::Slice piece = pieces.of(s, k);
      if (s != rank && piece.count > 0)
        t.isend(requests, send + std::size_t(s) * piece_bytes, piece.count * element, s);
    }
  };
  rounds.upload = [&](std::size_t k, const std::byte* recv) {
    const util::Slice mine = owner ? pieces.of(rank, k) : util::Slice{};
    if (mine.count == 0) return;
    const std::size_t bytes = mine.count * element;
    for (int r = 0; r < size; ++r) {
      std::byte* to = contributions + std::size_t(r) * bytes;
      if (r == rank)
        backend.copy(to, util::element_at(job.in, mine.offset, element), bytes, Copy::device_to_device);
      else
        backend.copy(to, recv + std::size_t(r) * bytes, bytes, Copy::host_to_device);
    }
    // acc = c0 op c1 op c2 ... (the next round's uploads queue behind it)
    reduce_in_rank_order(backend, util::element_at(job.out, mine.offset, element), contributions, bytes, size,
                         mine.count, job.dtype, job.op);
  };
  run_pinned_rounds(backend, t, rounds);
}

class PsgpuLevel final : public GroupLevel {
 public:
  using GroupLevel::GroupLevel;

  void reduce_scatter(const plan::Job& job, int owners) override {
    if (size_ == 1) return copy(job);
    psgpu_reduce_scatter(backend_, mpi_, job, owners);
  }
  void all_gather(const plan::Job& job, int owners) override {
    if (size_ > 1) pinned_all_gather(backend_, mpi_, job, owners);
  }
  void all_reduce(const plan::Job& job) override {
    if (size_ == 1) return copy(job);
    const int owners = job.shards >= 2 ? std::min(job.shards, size_) : size_;
    psgpu_reduce_scatter(backend_, mpi_, job, owners);
    pinned_all_gather(backend_, mpi_, job, owners);
  }
  void reduce(const plan::Job& job) override {
    // All-reduce into scratch; the root keeps it.
    plan::Job whole = job;
    whole.out = backend_.device_scratch(1, job.bytes());
    all_reduce(whole);
    if (rank_ == job.root) backend_.copy(job.out, whole.out, job.bytes(), Copy::device_to_device);
  }
  void broadcast(const plan::Job&) override {
    throw Unavailable(
        util::located("internal error: psgpu has no broadcast (the planner runs the host default instead)"));
  }
};

}  // namespace

extern const Algorithm psgpu = {
    .info = {.name = "psgpu",
             .description = "slice owners reduce on their GPUs in rank order, bytes over MPI through pinned memory",
             .memory = Memory::cuda, .broadcast = false, .shards = true},
    .make_level = &make_level<PsgpuLevel>};

}  // namespace strata::gpu
