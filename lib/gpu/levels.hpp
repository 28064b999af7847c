// The GPU levels of one communicator, each made once per (algorithm, group)
// on first use and kept while the backend lives: a GPU algorithm's own
// (gpu::Algorithm::make_level, from the registry) or a host algorithm run
// on CUDA data (gpu/staged.hpp). Owned next to the backend it was made
// over (api::Session), destroyed before it.
#pragma once

#include <memory>
#include <vector>

#include "gpu/algorithm.hpp"
#include "gpu/backend.hpp"
#include "host/algorithm.hpp"
#include "plan/level.hpp"

namespace strata::gpu {

class Levels {
 public:
  explicit Levels(Backend& backend) : backend_(backend) {}
  Levels(const Levels&) = delete;
  Levels& operator=(const Levels&) = delete;

  // The level of GPU algorithm `algorithm` over `group`, made on first use
  // (collective over the group: NCCL communicators are created then,
  // bounded by topo::setup_seconds(), every member raising the same error
  // on a failure). Only within an open call.
  plan::Level& level(const Algorithm& algorithm, plan::Group group);
  // The level that runs host algorithm `algorithm` on CUDA data over
  // `group` through pinned host buffers.
  plan::Level& staged(const host::Algorithm& algorithm, plan::Group group);
  // Whether the level of `algorithm` (a gpu::Algorithm or a
  // host::Algorithm) over `group` was made already.
  bool made(const void* algorithm, plan::Group group) const;

 private:
  // The level made for (algorithm, group), made by make() the first time.
  template <typename Make>
  plan::Level& made_once(const void* algorithm, plan::Group group, Make&& make);

  struct Made {
    const void* algorithm;  // a gpu::Algorithm or a host::Algorithm
    plan::Group group;
    std::unique_ptr<plan::Level> level;
  };
  Backend& backend_;
  std::vector<Made> made_;
};

}  // namespace strata::gpu
