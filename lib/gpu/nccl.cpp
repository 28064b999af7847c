// nccl: NCCL's own collectives over the group's NCCL communicator, and the
// reduce-scatter / all-gather into the owners' slices strata's hierarchy
// uses (util::owner_slice over `owners` <= members: equal blocks, the
// remainder on the last owner): when every member owns a slice, native
// ncclReduceScatter / ncclAllGather over the divisible prefix and one
// ncclReduce / ncclBroadcast of the short tail to or from the last owner, in
// one group; with fewer owners than members (unequal nodes), one ncclReduce
// / ncclBroadcast per slice. Floating min/max
// never reach NCCL's reduction (it drops NaN, docs/GPU.md): the exchange
// reduce-scatter moves their bytes with grouped ncclSend/ncclRecv and
// reduces them with strata's kernel in rank order, then ncclAllGather (or,
// for reduce, every owner's slice to the root). The operations are built
// here as NcclOp lists; the backend issues each list as one NCCL group.
#include <vector>

#include "gpu/algorithm.hpp"
#include "gpu/group_level.hpp"
#include "gpu/rank_order.hpp"
#include "plan/nan.hpp"
#include "util/slice.hpp"

namespace strata::gpu {
namespace {

using Kind = NcclOp::Kind;

class NcclLevel final : public GroupLevel {
 public:
  // The group's NCCL communicator is created now (collective over the
  // group) unless the group is one rank.
  NcclLevel(Backend& backend, plan::Group group)
      : GroupLevel(backend, group), comm_(size_ > 1 ? backend.nccl_comm(group) : NcclComm{}) {}

  void reduce_scatter(const plan::Job& job, int owners) override {
    if (size_ == 1) return copy(job);
    if (plan::nccl_reduces(job.op, job.dtype)) nccl_reduce_scatter(job, owners);
    else exchange_reduce_scatter(job, owners);
  }
  void all_gather(const plan::Job& job, int owners) override {
    if (size_ > 1) nccl_all_gather(job, owners);
  }
  void all_reduce(const plan::Job& job) override {
    if (size_ == 1) return copy(job);
    if (plan::nccl_reduces(job.op, job.dtype))
      return issue({{Kind::all_reduce, job.in, job.out, job.count, job.dtype, job.op}}, "ncclAllReduce");
    exchange_reduce_scatter(job, comm_.size);
    nccl_all_gather(job, comm_.size);
  }
  void reduce(const plan::Job& job) override {
    if (size_ == 1) return copy(job);
    // NCCL wants a receive buffer on the root only.
    if (plan::nccl_reduces(job.op, job.dtype))
      return issue({{Kind::reduce, job.in, job.out, job.count, job.dtype, job.op, job.root}}, "ncclReduce");
    // Reduce-scatter into the root's out (scratch elsewhere), then every
    // owner's slice to the root.
    plan::Job whole = job;
    if (rank_ != job.root) whole.out = backend_.device_scratch(1, job.bytes());
    exchange_reduce_scatter(whole, comm_.size);
    gather_slices(whole, comm_.size, job.root);
  }
  void broadcast(const plan::Job& job) override {
    if (size_ > 1)
      issue({{Kind::broadcast, job.out, job.out, job.count, job.dtype, ReduceOp::sum, job.root}}, "ncclBroadcast");
  }

 private:
  void issue(const std::vector<NcclOp>& ops, const char* what) { backend_.nccl(group_, ops, what); }

  // One op per non-empty owner's slice s (made by op_for(s, slice)), in one
  // group.
  template <typename OpFor>
  std::vector<NcclOp> per_slice(const plan::Job& job, int owners, OpFor&& op_for) const {
    std::vector<NcclOp> ops;
    for (int s = 0; s < owners; ++s) {
      const util::Slice slice = util::owner_slice(job.count, std::size_t(owners), std::size_t(s));
      if (slice.count > 0) op_for(ops, s, slice);
    }
    return ops;
  }

  // Member s < owners ends with slice s of the reduction in job.out (an op
  // NCCL reduces as strata does).
  void nccl_reduce_scatter(const plan::Job& job, int owners) {
    const std::size_t element = dtype_size(job.dtype);
    const auto* in = static_cast<const std::byte*>(job.in);
    auto* out = static_cast<std::byte*>(job.out);
    if (owners < comm_.size)
      return issue(per_slice(job, owners,
                             [&](std::vector<NcclOp>& ops, int s, util::Slice slice) {
                               ops.push_back({Kind::reduce, in + slice.offset * element,
                                              out + slice.offset * element, slice.count, job.dtype, job.op, s});
                             }),
                   "ncclReduce (grouped reduce-scatter)");
    // NCCL's blocks: member r receives block r of the prefix at its own
    // slice of out (in place exactly when in == out: NCCL's in-place form is
    // recvbuff == sendbuff + rank * block). The tail goes to the last owner.
    const std::size_t block = job.count / std::size_t(owners), prefix = block * std::size_t(owners);
    std::vector<NcclOp> ops;
    if (block > 0)
      ops.push_back({Kind::reduce_scatter, in, out + std::size_t(comm_.rank) * block * element, block, job.dtype,
                     job.op});
    if (prefix < job.count)
      ops.push_back({Kind::reduce, in + prefix * element, out + prefix * element, job.count - prefix, job.dtype,
                     job.op, owners - 1});
    issue(ops, "ncclReduceScatter (and ncclReduce of the tail)");
  }

  // Every member ends with every slice s < owners of job.out.
  void nccl_all_gather(const plan::Job& job, int owners) {
    const std::size_t element = dtype_size(job.dtype);
    auto* out = static_cast<std::byte*>(job.out);
    if (owners < comm_.size)
      return issue(per_slice(job, owners,
                             [&](std::vector<NcclOp>& ops, int s, util::Slice slice) {
                               std::byte* at = out + slice.offset * element;
                               ops.push_back({Kind::broadcast, at, at, slice.count, job.dtype, ReduceOp::sum, s});
                             }),
                   "ncclBroadcast (grouped all-gather)");
    const std::size_t block = job.count / std::size_t(owners), prefix = block * std::size_t(owners);
    std::vector<NcclOp> ops;
    if (block > 0)
      ops.push_back({Kind::all_gather, out + std::size_t(comm_.rank) * block * element, out, block, job.dtype});
    if (prefix < job.count)
      ops.push_back({Kind::broadcast, out + prefix * element, out + prefix * element, job.count - prefix, job.dtype,
                     ReduceOp::sum, owners - 1});
    issue(ops, "ncclAllGather (and ncclBroadcast of the tail)");
  }

  // The reduce-scatter for any op: NCCL only moves the bytes (grouped
  // send/receive: slice s of every member to member s), and member s
  // reduces the contributions in rank order with strata's kernel. Same
  // traffic as a reduce-scatter, plus one device buffer of the slice x
  // members.
  void exchange_reduce_scatter(const plan::Job& job, int owners) {
    const std::size_t element = dtype_size(job.dtype);
    const int rank = comm_.rank, size = comm_.size;
    const util::Slice mine =
        rank < owners ? util::owner_slice(job.count, std::size_t(owners), std::size_t(rank)) : util::Slice{};
    const std::size_t slice_bytes = mine.count * element;
    const auto* in = static_cast<const std::byte*>(job.in);
    auto* out = static_cast<std::byte*>(job.out);
    // Contribution r of my slice lands at [r * slice_bytes]; mine is copied
    // first, since out (== in when in place) receives the result.
    auto* contributions = static_cast<std::byte*>(backend_.device_scratch(3, slice_bytes * std::size_t(size)));
    if (mine.count > 0)
      backend_.copy(contributions + std::size_t(rank) * slice_bytes, in + mine.offset * element, slice_bytes,
                    Copy::device_to_device);
    issue(per_slice(job, owners,
                    [&](std::vector<NcclOp>& ops, int s, util::Slice slice) {
                      if (s != rank) {
                        ops.push_back(bytes_op(Kind::send, in + slice.offset * element, nullptr,
                                               slice.count * element, s));
                        return;
                      }
                      for (int r = 0; r < size; ++r)
                        if (r != rank)
                          ops.push_back(bytes_op(Kind::recv, nullptr, contributions + std::size_t(r) * slice_bytes,
                                                 slice_bytes, r));
                    }),
          "ncclSend/ncclRecv (reduce-scatter for NaN-keeping min/max)");
    if (mine.count == 0) return;
    reduce_in_rank_order(backend_, out + mine.offset * element, contributions, slice_bytes, size, mine.count,
                         job.dtype, job.op);
  }

  // Member s sends its slice s of job.out to `root`: the gather half of a
  // reduce built from exchange_reduce_scatter.
  void gather_slices(const plan::Job& job, int owners, int root) {
    const std::size_t element = dtype_size(job.dtype);
    auto* out = static_cast<std::byte*>(job.out);
    issue(per_slice(job, owners,
                    [&](std::vector<NcclOp>& ops, int s, util::Slice slice) {
                      if (s == root) return;
                      std::byte* at = out + slice.offset * element;
                      if (comm_.rank == s) ops.push_back(bytes_op(Kind::send, at, nullptr, slice.count * element, root));
                      if (comm_.rank == root) ops.push_back(bytes_op(Kind::recv, nullptr, at, slice.count * element, s));
                    }),
          "ncclSend/ncclRecv (gather to the root)");
  }

  // A point-to-point op moving `bytes` raw bytes.
  static NcclOp bytes_op(Kind kind, const void* send, void* recv, std::size_t bytes, int peer) {
    return {kind, send, recv, bytes, DataType::u8, ReduceOp::sum, peer};
  }

  NcclComm comm_;
};

}  // namespace

// NCCL's own collectives over the ranks' devices (min/max of floating
// types through strata's kernel instead: NCCL's drop NaN, docs/GPU.md). Its
// flat all-reduce can make every replica of a batch an NCCL rank.
extern const Algorithm nccl = {
    .info = {.name = "nccl",
             .description = "NCCL's own collectives over the ranks' devices (floating min/max: strata's kernel)",
             .memory = Memory::cuda, .nccl = true, .replica_ranks = true},
    .make_level = &make_level<NcclLevel>};

}  // namespace strata::gpu
