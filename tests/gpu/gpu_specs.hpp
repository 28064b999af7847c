// Which all_reduce_specs the GPU tests force, read from the registry
// (strata::registered_algorithms), so that an algorithm added to
// lib/exec/algorithms.def is covered without touching the tests:
//  - "auto";
//  - every GPU algorithm (one that serves CUDA tensors) flat, and with
//    "#2" where it shards;
//  - every GPU algorithm inside nodes over every GPU algorithm across them;
//  - every host algorithm across nodes once, under the GPU algorithms
//    inside nodes in turn (nccl/xring, psgpu/rechd, ...);
//  - host algorithms on CUDA tensors through pinned copies: the first one
//    flat, and each that runs over a node's shared memory on both levels.
// A plan a layout cannot run is the program's to skip (Unavailable).
#pragma once

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

inline std::vector<std::string> gpu_specs() {
  const std::vector<AlgorithmInfo> gpu = algorithms_on(Memory::cuda), host = algorithms_on(Memory::host);
  std::vector<std::string> specs = {"auto"};
  for (const AlgorithmInfo& a : gpu) {
    specs.push_back(a.name);
    if (a.shards) specs.push_back(a.name + "#2");
  }
  for (const AlgorithmInfo& inside : gpu)
    for (const AlgorithmInfo& across : gpu) specs.push_back(inside.name + "/" + across.name);
  for (std::size_t i = 0; i < host.size() && !gpu.empty(); ++i)
    specs.push_back(gpu[i % gpu.size()].name + "/" + host[i].name);
  if (!host.empty()) specs.push_back(host.front().name);
  for (const AlgorithmInfo& a : host)
    if (a.shared_memory) specs.push_back(a.name + "/" + a.name);
  return specs;
}

}  // namespace strata::gpu_test
