// The default level of a host algorithm (host::Algorithm::make_level unless
// the algorithm makes its own): a plan::Level over a host::Transport that
// runs the algorithm's entry points on one group of ranks for one call, with
// the node's shared-memory segment where the plan runs the level over it.
#pragma once

#include "host/algorithm.hpp"
#include "host/shm_segment.hpp"
#include "host/transport.hpp"
#include "plan/level.hpp"

namespace strata::host {

class DefaultLevel final : public plan::Level {
 public:
  // `transport` is over the group (and outlives the level). With `segment`
  // (the group is one node), reduce-scatter and all-gather run over shared
  // memory and the collectives see it through the transport.
  DefaultLevel(Transport& transport, const Algorithm& algorithm, ShmSegment* segment);

  void copy(const plan::Job& job) override;
  // Without shared memory: the algorithm's own reduce-scatter where it has
  // one and every member owns a slice, else it all-reduces the whole buffer
  // (every member then holds every slice).
  void reduce_scatter(const plan::Job& job, int owners) override;
  // Without shared memory: the algorithm's own all-gather where it has one
  // and every member owns a slice, else each owner sends its slice to every
  // other member.
  void all_gather(const plan::Job& job, int owners) override;
  // Over shared memory: shm::all_gather_blocks, the call check in its first
  // round; else plan::Level's.
  void all_gather_blocks(const plan::Job& job, int rank, int size) override;
  void all_reduce(const plan::Job& job) override { algorithm_.all_reduce(transport_, job); }
  void reduce(const plan::Job& job) override { algorithm_.reduce(transport_, job); }
  void broadcast(const plan::Job& job) override { algorithm_.broadcast(transport_, job); }

 private:
  Transport& transport_;
  const Algorithm& algorithm_;
  ShmSegment* segment_;
};

}  // namespace strata::host
