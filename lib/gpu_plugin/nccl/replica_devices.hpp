// Whether every replica of every rank of a batch may be an NCCL rank: each
// call gathers every rank's replica devices (a cached answer could differ
// between ranks whose devices changed and ranks whose did not), then the
// GPU control plane decides (topo::decide_replicas), identically on every
// rank. The gathered table is kept for the replica communicator it sizes.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "gpu_plugin/nccl/engine.hpp"

namespace strata::nccl {

class ReplicaDevices {
 public:
  // Over `engine`, which must outlive it.
  explicit ReplicaDevices(Engine& engine) : engine_(engine) {}
  // A gather given up at a deadline may still land: its buffers are kept
  // reachable and never freed when the engine ends broken.
  ~ReplicaDevices();
  ReplicaDevices(const ReplicaDevices&) = delete;
  ReplicaDevices& operator=(const ReplicaDevices&) = delete;

  // Collective over the engine's communicator, bounded by the open call's
  // deadline: gathers `mine` (this rank's replica devices) from every rank
  // and returns the control plane's verdict. Throws Mismatch when ranks
  // hold different replica counts, InvalidArgument for a device some rank
  // does not have, on every rank.
  bool usable(const std::vector<int>& mine);

  // Every rank's replica devices, by rank, as the last usable() gathered them.
  const std::vector<std::vector<int>>& table() const { return table_; }

 private:
  // The MPI buffers of the gather.
  struct Gathered {
    int count = 0;
    std::vector<int> counts, offsets, mine, all;
  };
  std::vector<std::vector<int>> gather(const std::vector<int>& mine);

  Engine& engine_;
  std::vector<std::vector<int>> table_;
  std::unique_ptr<Gathered> gathered_ = std::make_unique<Gathered>();
};

}  // namespace strata::nccl
