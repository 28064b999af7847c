// A host algorithm: what the planner knows about it (plan::Algorithm), its
// entry points, each running one collective over a Transport, and how its
// level is made (like a GPU algorithm's: gpu/algorithm.hpp). One file per
// algorithm (xring.cpp, rechd.cpp, ...) defines one of these, named after
// the algorithm; lib/exec/algorithms.def lists them.
#pragma once

#include <cstddef>
#include <new>
#include <utility>

#include "host/transport.hpp"
#include "plan/algorithm.hpp"
#include "plan/job.hpp"
#include "plan/level.hpp"

namespace strata::host {

using plan::Job;

class ShmSegment;
struct Algorithm;

using CollectiveFn = void (*)(Transport&, const Job&);

// Room for one host level on the caller's stack: a level is made for every
// call (and every staged chunk), so making one must not allocate. A
// MakeLevel constructs the level in the slot; the slot destroys it.
class LevelSlot {
 public:
  LevelSlot() = default;
  LevelSlot(const LevelSlot&) = delete;
  LevelSlot& operator=(const LevelSlot&) = delete;
  ~LevelSlot() { clear(); }

  // Constructs an L in the slot (ending the level it held, if any) and
  // returns it. L must fit (checked at compile time).
  template <typename L, typename... Args>
  plan::Level& emplace(Args&&... args) {
    static_assert(sizeof(L) <= kBytes && alignof(L) <= alignof(std::max_align_t), "a host level must fit a LevelSlot");
    clear();
    level_ = new (bytes_) L(std::forward<Args>(args)...);
    return *level_;
  }

 private:
  static constexpr std::size_t kBytes = 64;
  void clear() {
    if (level_) level_->~Level();
    level_ = nullptr;
  }
  alignas(std::max_align_t) std::byte bytes_[kBytes];
  plan::Level* level_ = nullptr;
};

// Makes `algorithm`'s level over `transport`, which spans the level's group
// and outlives the level, in `slot`. With `segment` (the group is one node
// and the plan runs the level over the node's shared memory),
// reduce-scatter and all-gather run over it and the collectives see it
// through the transport. Every host level is made through one of these, for
// one call (exec) or one staged chunk (gpu/staged.cpp).
using MakeLevel = plan::Level& (*)(const Algorithm& algorithm, Transport& transport, ShmSegment* segment,
                                   LevelSlot& slot);

// The level every algorithm gets unless it makes its own: its entry points,
// and the default reduce-scatter and all-gather (host/default_level.hpp).
plan::Level& make_default_level(const Algorithm& algorithm, Transport& transport, ShmSegment* segment,
                                LevelSlot& slot);

struct Algorithm {
  plan::Algorithm info;               // what the planner and the cost model know (memory = host)
  CollectiveFn all_reduce = nullptr;  // required
  CollectiveFn reduce = nullptr;      // non-null exactly when info.reduce
  CollectiveFn broadcast = nullptr;  // non-null exactly when info.broadcast
  // Optional: the level operations over the whole group (owners = its
  // size), as plan::Level defines them: member s ends with owner slice s of
  // the reduction in job.out / every member ends with every owner's slice of
  // job.out, in place. Null: the default level all-reduces the whole buffer
  // / sends each slice to every member (host/default_level.hpp).
  CollectiveFn reduce_scatter = nullptr;
  CollectiveFn all_gather = nullptr;
  MakeLevel make_level = &make_default_level;
};

}  // namespace strata::host
