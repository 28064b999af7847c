#include "exec/hierarchical.hpp"

#include "util/slice.hpp"
#include "util/trace.hpp"

namespace strata::exec {
namespace {

util::Slice my_slice(const plan::Job& job, const topo::NodeSplit& split) {
  return util::owner_slice(job.count, static_cast<std::size_t>(split.min_local_size),
                           static_cast<std::size_t>(split.local_rank));
}

// `job` narrowed to `slice`, in place in `buffer`.
plan::Job on_slice(const plan::Job& job, void* buffer, util::Slice slice) {
  plan::Job part = job;
  part.in = part.out = static_cast<std::byte*>(buffer) + slice.offset * job.element_bytes();
  part.count = slice.count;
  return part;
}

// Where parent rank `rank` sits: its node and its index inside the node.
struct Place {
  int node = 0;
  int local = 0;
};
Place place_of(const topo::NodeSplit& split, int rank) {
  Place p{split.node_of_rank[static_cast<std::size_t>(rank)], 0};
  for (int r = 0; r < rank; ++r) p.local += split.node_of_rank[static_cast<std::size_t>(r)] == p.node ? 1 : 0;
  return p;
}

bool owns_a_slice(const topo::NodeSplit& split, const plan::Level* cross) {
  return split.node_count > 1 && cross && split.local_rank < split.min_local_size;
}

// A node of one rank: nothing to do inside it, so `b` runs alone on the
// whole message, from the input to the output (copying the input to the
// output first and running `b` there in place cost that copy: 8 MiB on two
// virtual nodes of one rank, 4.2-4.7 ms against 2.9-3.1 ms for rechd flat;
// docs/PERFORMANCE.md).
bool alone_on_node(const topo::NodeSplit& split, const plan::Level* cross) {
  return split.local_size == 1 && owns_a_slice(split, cross);
}

// Step 1 of all-reduce and reduce: member s of the node ends with owner
// slice s of the node's reduction in job.out (a node of one rank copies).
void reduce_scatter_in_node(const topo::NodeSplit& split, plan::Level& intra, const plan::Job& job) {
  util::trace::Span level("inside node: reduce-scatter");
  if (split.local_size == 1) intra.copy(job);
  else intra.reduce_scatter(job, split.min_local_size);
}

}  // namespace

void hierarchical_all_reduce(const plan::Job& job, const topo::NodeSplit& split, plan::Level& intra,
                             plan::Level* cross) {
  const int owners = split.min_local_size;

  if (alone_on_node(split, cross)) {
    util::trace::Span level("across nodes: all-reduce");
    cross->all_reduce(job);
    return;
  }

  // 1. Reduce-scatter inside the node.
  reduce_scatter_in_node(split, intra, job);

  // 2. Across nodes, on my slice.
  if (owns_a_slice(split, cross)) {
    const util::Slice mine = my_slice(job, split);
    util::trace::Span level("across nodes: all-reduce");
    if (mine.count > 0) cross->all_reduce(on_slice(job, job.out, mine));
  }

  // 3. All-gather inside the node.
  if (split.local_size > 1) {
    util::trace::Span level("inside node: all-gather");
    intra.all_gather(job, owners);
  }
}

void hierarchical_reduce(const plan::Job& job, const topo::NodeSplit& split, plan::Level& intra, plan::Level* cross,
                         void* partial) {
  const int owners = split.min_local_size;
  const Place root = place_of(split, job.root);
  const bool on_root_node = split.node_index == root.node;
  plan::Job node_job = job;
  node_job.out = split.local_rank == root.local && on_root_node ? job.out : partial;

  if (alone_on_node(split, cross)) {  // into the root's output or `partial`
    util::trace::Span level("across nodes: reduce");
    node_job.root = root.node;  // cross-node groups are ordered by node index
    cross->reduce(node_job);
    return;
  }

  // 1. Reduce-scatter inside the node.
  reduce_scatter_in_node(split, intra, node_job);

  // 2. Each owner's slice, reduced across nodes to its peer on the root's node.
  if (owns_a_slice(split, cross)) {
    const util::Slice mine = my_slice(job, split);
    if (mine.count > 0) {
      util::trace::Span level("across nodes: reduce");
      plan::Job slice = on_slice(job, node_job.out, mine);
      slice.root = root.node;  // cross-node groups are ordered by node index
      cross->reduce(slice);
    }
  }

  // 3. The root's node gathers the slices (every rank of it, in `partial`
  //    where it is not the root's `out`).
  if (on_root_node && split.local_size > 1) {
    util::trace::Span level("inside node: all-gather");
    intra.all_gather(node_job, owners);
  }
}

void hierarchical_broadcast(const plan::Job& job, const topo::NodeSplit& split, plan::Level& intra,
                            plan::Level* cross) {
  const int owners = split.min_local_size;
  const Place root = place_of(split, job.root);
  const bool on_root_node = split.node_index == root.node;

  // 1. Inside the root's node: everyone there has everything.
  if (on_root_node && split.local_size > 1) {
    util::trace::Span level("inside node: broadcast");
    plan::Job node_job = job;
    node_job.root = root.local;
    intra.broadcast(node_job);
  }

  // 2. Each owner's slice, from its peer on the root's node to every node.
  if (owns_a_slice(split, cross)) {
    const util::Slice mine = my_slice(job, split);
    if (mine.count > 0) {
      util::trace::Span level("across nodes: broadcast");
      plan::Job slice = on_slice(job, job.out, mine);
      slice.root = root.node;
      cross->broadcast(slice);
    }
  }

  // 3. Every other node gathers the slices.
  if (!on_root_node && split.local_size > 1) {
    util::trace::Span level("inside node: all-gather");
    intra.all_gather(job, owners);
  }
}

}  // namespace strata::exec
