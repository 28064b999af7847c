// psgpu: "parameter server on GPU". Every rank sends slice s of its input to
// slice owner s over MPI (through pinned host memory); the owner uploads
// the contributions and reduces them on its GPU with strata's kernel in
// rank order (deterministic), then the finished slices are all-gathered the
// same way. No NCCL communicator is needed, so it also runs when several
// ranks share one GPU. job.shards >= 2 limits the flat all-reduce's owners
// to that many ranks. No broadcast of its own: the planner runs the host
// default (tree) through pinned copies.
#include <algorithm>

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

// Member s < owners ends with slice s of the reduction in job.out. Waits
// for its copies itself.
void psgpu_reduce_scatter(Backend& backend, MPI_Comm comm, const plan::Job& job, int owners) {
  host::Transport t(comm, backend.deadline(), backend.info(), backend.workspace());
  const std::size_t element = dtype_size(job.dtype);
  const std::size_t bytes = job.count * element;
  const int rank = t.rank(), size = t.size();
  const util::Slice mine = rank < owners ? util::owner_slice(job.count, std::size_t(owners), std::size_t(rank))
                                         : util::Slice{};
  const std::size_t slice_bytes = mine.count * element;

  // My input to pinned memory, then the contributions to their owners.
  auto* staged = static_cast<std::byte*>(backend.pinned(0, bytes));
  backend.copy(staged, job.in, bytes, Copy::device_to_host);
  // Contributions land at [r * slice_bytes] of pinned slot 1, mine included.
  auto* gathered = static_cast<std::byte*>(backend.pinned(1, slice_bytes * std::size_t(size)));
  auto* contributions = static_cast<std::byte*>(backend.device_scratch(0, slice_bytes * std::size_t(size)));
  if (mine.count > 0)
    backend.copy(contributions + std::size_t(rank) * slice_bytes,
                 util::element_at(job.in, mine.offset, element), slice_bytes, Copy::device_to_device);
  host::Requests requests;
  if (mine.count > 0)
    for (int r = 0; r < size; ++r)
      if (r != rank) t.irecv(requests, gathered + std::size_t(r) * slice_bytes, slice_bytes, r);
  backend.wait();  // staged is complete
  for (int s = 0; s < owners; ++s) {
    const util::Slice slice = util::owner_slice(job.count, std::size_t(owners), std::size_t(s));
    if (s != rank && slice.count > 0) t.isend(requests, staged + slice.offset * element, slice.count * element, s);
  }
  t.wait(requests);
  if (mine.count == 0) return;

  // Upload and reduce in rank order: acc = c0 op c1 op c2 ...
  for (int r = 0; r < size; ++r)
    if (r != rank)
      backend.copy(contributions + std::size_t(r) * slice_bytes, gathered + std::size_t(r) * slice_bytes,
                   slice_bytes, Copy::host_to_device);
  reduce_in_rank_order(backend, static_cast<std::byte*>(job.out) + mine.offset * element, contributions,
                       slice_bytes, size, mine.count, job.dtype, job.op);
  backend.wait();
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

std::unique_ptr<plan::Level> make_psgpu_level(Backend& backend, plan::Group group) {
  return std::make_unique<PsgpuLevel>(backend, group);
}

}  // namespace

// Slice owners reduce on their GPUs; bytes move over MPI through pinned
// host memory (works with ranks sharing a GPU).
extern const Algorithm psgpu = {{.name = "psgpu", .memory = Memory::cuda, .broadcast = false, .shards = true}, &make_psgpu_level};

}  // namespace strata::gpu
