// Which all_reduce_specs the GPU tests force, read from the registry
// (strata::registered_algorithms), so that an algorithm added to
// lib/exec/algorithms.def is covered without touching the tests.
// gpu_specs(Breadth::each) names every algorithm in every role once:
//  - "auto";
//  - every GPU algorithm (one that serves CUDA tensors) flat, and with
//    "#2" where it shards;
//  - every GPU algorithm inside nodes over the first across them, and the
//    first inside over every other across;
//  - the first host algorithm across nodes (nccl/xring: the host-staged
//    path, the same for every host algorithm, whose own tests run on host
//    memory);
//  - host algorithms on CUDA tensors through pinned copies: the first one
//    flat, and each that runs over a node's shared memory on both levels.
// Breadth::every_host_level adds every other host algorithm across nodes,
// under the GPU algorithms inside nodes in turn (psgpu/rechd, ...): the
// collectives test runs it.
// A plan a layout cannot run is the program's to skip (Unavailable).
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include "strata/spec.hpp"

namespace strata::gpu_test {

// The registered algorithms serving `memory`, in registry order.
inline std::vector<AlgorithmInfo> algorithms_on(Memory memory) {
  std::vector<AlgorithmInfo> list;
  for (const AlgorithmInfo& a : registered_algorithms())
    if (a.memory == memory) list.push_back(a);
  return list;
}

enum class Breadth { each, every_host_level };

inline std::vector<std::string> gpu_specs(Breadth breadth = Breadth::each) {
  const std::vector<AlgorithmInfo> gpu = algorithms_on(Memory::cuda), host = algorithms_on(Memory::host);
  std::vector<std::string> specs = {"auto"};
  for (const AlgorithmInfo& a : gpu) {
    specs.push_back(a.name);
    if (a.shards) specs.push_back(a.name + "#2");
  }
  for (std::size_t i = 0; i < gpu.size(); ++i) specs.push_back(gpu[i].name + "/" + gpu.front().name);
  for (std::size_t i = 1; i < gpu.size(); ++i) specs.push_back(gpu.front().name + "/" + gpu[i].name);
  const std::size_t host_across = breadth == Breadth::each ? std::min<std::size_t>(1, host.size()) : host.size();
  for (std::size_t i = 0; i < host_across && !gpu.empty(); ++i)
    specs.push_back(gpu[i % gpu.size()].name + "/" + host[i].name);
  if (!host.empty()) specs.push_back(host.front().name);
  for (const AlgorithmInfo& a : host)
    if (a.shared_memory) specs.push_back(a.name + "/" + a.name);
  return specs;
}

}  // namespace strata::gpu_test
