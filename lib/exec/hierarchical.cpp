#include "exec/hierarchical.hpp"

#include <cstring>

#include "host/shm_rounds.hpp"
#include "util/slice.hpp"

namespace strata::exec {

using host::Requests;
using host::Transport;
using plan::Job;
namespace {

// Generic intra-node all-gather for algorithms without shared memory: each
// owner sends its slice straight to every other local rank.
void exchange_slices(Transport& t, void* out, std::size_t count, DataType dtype, int owners) {
  const std::size_t element = dtype_size(dtype);
  auto* data = static_cast<std::byte*>(out);
  Requests requests;
  for (int s = 0; s < owners; ++s) {
    const util::Slice slice = util::even_slice(count, static_cast<std::size_t>(owners), static_cast<std::size_t>(s));
    if (slice.count == 0) continue;
    std::byte* at = data + slice.offset * element;
    if (s == t.rank()) {
      for (int peer = 0; peer < t.size(); ++peer)
        if (peer != s) t.isend(requests, at, slice.count * element, peer);
    } else {
      t.irecv(requests, at, slice.count * element, s);
    }
  }
  t.wait(requests);
}

}  // namespace

void hierarchical_all_reduce(const Job& job, const host::Algorithm& intra, const host::Algorithm& cross,
                             const topo::NodeSplit& split, host::ShmSegment* segment, const util::Deadline& deadline,
                             const plan::CallInfo& info, util::Workspace& workspace, util::Arena* landing) {
  const int owners = split.min_local_size;
  const bool shm = segment != nullptr;

  // 1. Reduce-scatter inside the node.
  Transport local(split.node, deadline, info, workspace, landing);
  if (split.local_size == 1) {
    if (job.out != job.in) std::memcpy(job.out, job.in, job.count * job.element_bytes());
  } else if (shm) {
    host::shm::reduce_scatter(local, *segment, job.in, job.out, job.count, job.dtype, job.op, owners);
  } else {
    Job whole = job;
    whole.shards = 1;
    intra.all_reduce(local, whole);
  }

  // 2. Across nodes, on my slice.
  if (split.node_count > 1 && split.cross != MPI_COMM_NULL) {
    const util::Slice mine = util::even_slice(job.count, static_cast<std::size_t>(owners),
                                              static_cast<std::size_t>(split.local_rank));
    if (mine.count > 0) {
      Transport across(split.cross, deadline, info, workspace, landing);
      Job slice = job;
      slice.in = slice.out = static_cast<std::byte*>(job.out) + mine.offset * job.element_bytes();
      slice.count = mine.count;
      cross.all_reduce(across, slice);
    }
  }

  // 3. All-gather inside the node.
  if (split.local_size == 1) return;
  if (shm) {
    host::shm::all_gather(local, *segment, job.out, job.count, job.dtype, owners);
  } else {
    exchange_slices(local, job.out, job.count, job.dtype, owners);
  }
}

}  // namespace strata::exec
