// Hierarchical all-reduce "a/b" on CUDA tensors, the GPU twin of
// lib/host/hierarchical.cpp (same slices, same owners):
//   1. reduce-scatter inside the node with `a` (nccl: NCCL on the node
//      communicator; psgpu: slice owners reduce on their GPU): local rank
//      i < min_local_size ends with slice i of its node's sum;
//   2. each owner runs `b` across nodes on its slice, all owners at once:
//      b = nccl uses the cross-node NCCL communicator of its local index,
//      any host algorithm runs through pinned buffers (staged.cpp);
//   3. all-gather inside the node with `a`.
#include "cuda/check.hpp"
#include "nccl/algorithms.hpp"
#include "util/slice.hpp"
#include "strata/errors.hpp"

namespace strata::nccl {

void hierarchical_all_reduce(Engine& e, std::string_view intra, const host::Algorithm* cross, const plan::Job& job,
                             const util::Deadline& d, const plan::CallInfo& info) {
  const topo::NodeSplit& split = e.split();
  const int owners = split.min_local_size;
  const bool nccl_inside = intra == "nccl";
  const std::size_t element = dtype_size(job.dtype);

  // 1. Reduce-scatter inside the node (result slices in job.out).
  if (split.local_size == 1) {
    if (job.out != job.in)
      STRATA_CHECK_CUDA(cudaMemcpyAsync(job.out, job.in, job.count * element, cudaMemcpyDeviceToDevice, e.stream()));
  } else if (nccl_inside) {
    nccl_reduce_scatter(e, e.node(d, info), job, owners, d, info);
  } else {
    psgpu_reduce_scatter(e, split.node, job, owners, d, info);
  }

  // 2. Across nodes, on my slice (every owner, even with an empty slice,
  //    joins communicator creation so that nobody waits alone).
  if (split.cross != MPI_COMM_NULL) {
    const util::Slice mine = util::even_slice(job.count, std::size_t(owners), std::size_t(split.local_rank));
    plan::Job slice = job;
    slice.out = static_cast<std::byte*>(job.out) + mine.offset * element;
    slice.in = slice.out;
    slice.count = mine.count;
    if (!cross) {  // nccl across nodes
      Comm& across = e.cross(d, info);
      if (slice.count > 0) nccl_all_reduce(e, across, slice, d, info);
    } else {
      e.wait(d, info);  // the slice must be complete before it is copied down
      staged(e, split.cross, Collective::all_reduce, *cross, slice, d, info);
    }
  }

  // 3. All-gather inside the node.
  if (split.local_size == 1) return;
  if (nccl_inside) {
    nccl_all_gather(e, e.node(d, info), job, owners, d, info);
  } else {
    e.wait(d, info);
    psgpu_all_gather(e, split.node, job, owners, d, info);
  }
}

}  // namespace strata::nccl
