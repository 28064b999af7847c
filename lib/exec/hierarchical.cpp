#include "exec/hierarchical.hpp"

#include "util/slice.hpp"

namespace strata::exec {

void hierarchical_all_reduce(const plan::Job& job, const topo::NodeSplit& split, plan::Level& intra,
                             plan::Level* cross) {
  const int owners = split.min_local_size;

  // 1. Reduce-scatter inside the node.
  if (split.local_size == 1) intra.copy(job);
  else intra.reduce_scatter(job, owners);

  // 2. Across nodes, on my slice.
  if (split.node_count > 1 && cross) {
    const util::Slice mine = util::owner_slice(job.count, static_cast<std::size_t>(owners),
                                              static_cast<std::size_t>(split.local_rank));
    if (mine.count > 0) {
      plan::Job slice = job;
      slice.in = slice.out = static_cast<std::byte*>(job.out) + mine.offset * job.element_bytes();
      slice.count = mine.count;
      cross->all_reduce(slice);
    }
  }

  // 3. All-gather inside the node.
  if (split.local_size > 1) intra.all_gather(job, owners);
}

}  // namespace strata::exec
