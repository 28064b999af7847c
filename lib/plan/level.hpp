// One level of a plan, bound to a group of ranks for one call: the
// executor interface every backend implements and the execute stage
// (lib/exec) drives. A flat plan runs one level over the whole
// communicator; a hierarchical plan "a/b" runs `a` over each node and `b`
// over each cross-node group (lib/exec/hierarchical.cpp, the one
// hierarchical driver for host and CUDA memory).
//
// Host levels run a host algorithm over MPI and shared memory (its
// make_level: lib/host/default_level.hpp unless it makes its own); GPU
// levels compose the GPU backend's device primitives: NCCL operations and
// strata's kernels on its stream
// (lib/gpu/nccl.cpp, lib/gpu/psgpu.cpp), or a host algorithm through pinned
// copies (lib/gpu/staged.hpp). Every member of the group makes the
// same calls in the same order. Jobs are trusted (the plan stage made them):
// count > 0, op != mean (the finish stage divides).
#pragma once

#include <cstddef>

#include "plan/job.hpp"

namespace strata::plan {

// The groups a level runs over.
enum class Group {
  world,  // the whole communicator (flat plans)
  node,   // the ranks of this rank's node
  cross,  // one rank per node, those with this rank's local index (local ranks below the smallest node's size)
};

class Level {
 public:
  virtual ~Level() = default;

  // job.out = job.in on this rank alone (a group of one); nothing when they
  // are the same buffer.
  virtual void copy(const Job& job) = 0;

  // Member s < owners ends with slice s (util::owner_slice(count, owners, s))
  // of the group's reduction of job.in in job.out; the rest of job.out is
  // unspecified. owners <= the group's size.
  virtual void reduce_scatter(const Job& job, int owners) = 0;

  // Every member ends with every slice s < owners of job.out as member s
  // holds it (in place in job.out).
  virtual void all_gather(const Job& job, int owners) = 0;

  // The public all-gather over the group (`rank` of `size`): job.count is
  // one block; job.in is this member's block, job.out holds `size` blocks
  // (job.in may be its block `rank`: in place). Every member ends with
  // every member's block in place. By default this member's block is
  // copied into place, then all_gather moves the others'; a level that
  // carries the call check in its first round writes job.out only after
  // it (a refused call writes nothing).
  virtual void all_gather_blocks(const Job& job, int rank, int size) {
    Job mine = job;
    mine.out = static_cast<std::byte*>(job.out) + static_cast<std::size_t>(rank) * job.bytes();
    copy(mine);  // nothing when in place
    if (size == 1) return;
    Job all = job;
    all.in = all.out;
    all.count = job.count * static_cast<std::size_t>(size);
    all_gather(all, size);
  }

  // The collectives, as the public calls define them, over the group.
  virtual void all_reduce(const Job& job) = 0;
  virtual void reduce(const Job& job) = 0;     // job.out may be null on non-roots
  virtual void broadcast(const Job& job) = 0;  // job.in == job.out
};

}  // namespace strata::plan
