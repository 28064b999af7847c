#include "plan/choose.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <fstream>
#include <string>

#include "plan/collective.hpp"
#include "plan/nan.hpp"
#include "strata/errors.hpp"
#include "util/log.hpp"
#include "util/where.hpp"

namespace strata::plan {
namespace {

// Defaults, from the measurements in docs/ALGORITHMS.md. Host memory, one
// node: shared-memory pscpu was fastest at every size from 8 B to 64 MiB.
// Several nodes: MPI's own all-reduce for the smallest calls (the call
// check's MPI all-reduce carries them, one round instead of two), then
// shared memory inside the node, latency-bound recursive halving-doubling
// across nodes for small messages, slice owners for medium and the
// pipelined ring for large ones. Reduce and broadcast: shared memory
// inside the node (pscpu's rooted rounds, lib/host/shm_rooted.hpp); on
// several nodes MPI's own for the smallest calls (carried by the check
// too), then a binomial tree across nodes while latency dominates, the
// pipelined ring above; CUDA tensors without NCCL take the tree and ring flat.
// CUDA memory (docs/GPU.md, "Which algorithm"): NCCL where the GPU control
// plane allows it for the groups a plan runs over — flat on one node,
// NCCL inside the node then NCCL across nodes on several — else psgpu
// inside the node (it needs no NCCL) and the host tables' cross levels
// through pinned copies; reduce and broadcast: flat NCCL, else the host
// table through pinned copies.
// Written as tuples (not parsed text) so they need no catalogue; a unit test
// checks that every name in them is registered.
constexpr long long k64KiB = 64LL << 10, k16MiB = 16LL << 20;
const Spec kOneNode{{{"pscpu", 1, -1}}};
const Spec kMultiNode{{{"mpi", 1, static_cast<long long>(kCheckCarriesBytes)},
                       {"pscpu/rechd", 1, k64KiB},
                       {"pscpu/pscpu", 1, k16MiB},
                       {"pscpu/xring", 1, -1}}};
const Spec kRooted{{{"tree", 1, k64KiB}, {"xring", 1, -1}}};
const Spec kRootedOneNode{{{"pscpu", 1, -1}}};
const Spec kRootedNodes{
    {{"mpi", 1, static_cast<long long>(kCheckCarriesBytes)}, {"pscpu/tree", 1, k64KiB}, {"pscpu/xring", 1, -1}}};
const Spec kCuda{{{"nccl", 1, -1}}};
const Spec kCudaNoNccl{{{"psgpu", 1, -1}}};
const Spec kCudaNodes{{{"nccl/nccl", 1, -1}}};
const Spec kCudaNcclInside{{{"nccl/rechd", 1, k64KiB}, {"nccl/pscpu", 1, k16MiB}, {"nccl/xring", 1, -1}}};
const Spec kCudaNcclAcross{{{"psgpu/nccl", 1, -1}}};
const Spec kCudaNoNcclNodes{{{"psgpu/rechd", 1, k64KiB}, {"psgpu/pscpu", 1, k16MiB}, {"psgpu/xring", 1, -1}}};
// reduce_scatter and all_gather run flat (no hierarchical driver for them):
// one node, the shared-memory rounds; several, the ring over MPI (its own
// reduce-scatter and all-gather); CUDA tensors, NCCL's where it may run
// over the whole communicator, else the ring through pinned copies.
const Spec kBlockwiseNodes{{{"xring", 1, -1}}};

std::string_view intra_level(std::string_view name) { return name.substr(0, name.find('/')); }
std::string_view cross_level(std::string_view name) {
  const auto slash = name.find('/');
  return slash == std::string_view::npos ? std::string_view() : name.substr(slash + 1);
}

bool serves(const Algorithm& algorithm, Collective collective) {
  switch (collective) {
    case Collective::all_reduce: return true;
    case Collective::reduce: return algorithm.reduce;
    case Collective::broadcast: return algorithm.broadcast;
    // Every level has a reduce-scatter and an all-gather (plan/level.hpp).
    case Collective::reduce_scatter:
    case Collective::all_gather: return true;
  }
  return false;
}

bool runs_on(const Algorithm* algorithm, Memory memory) {
  // Host algorithms serve CUDA tensors too (through pinned host copies).
  return algorithm && (memory == Memory::cuda || algorithm->memory == Memory::host);
}

// Whether the hierarchical driver runs `collective` on `memory`: all-reduce
// on any memory, reduce and broadcast on host levels only.
bool runs_hierarchically(Collective collective, Memory memory) {
  return collective == Collective::all_reduce || (rooted(collective) && memory == Memory::host);
}

// The choice a spec entry names, before fallback. A cross level counts
// where the collective runs hierarchically; one that cannot run on `memory`
// or does not serve the collective is dropped (`a` then runs flat).
Choice from_entry(Catalogue known, const SpecEntry& entry, Collective collective, Memory memory) {
  Choice choice;
  choice.algorithm = find(known, intra_level(entry.algorithm));
  choice.shards = entry.shards;
  const std::string_view cross = cross_level(entry.algorithm);
  if (runs_hierarchically(collective, memory) && !cross.empty()) {
    const Algorithm* level = find(known, cross);
    if (runs_on(level, memory) && serves(*level, collective)) choice.cross = level;
  }
  return choice;
}

}  // namespace

std::string Choice::name() const {
  if (!algorithm) return "none";
  return cross ? fmt::format("{}/{}", algorithm->name, cross->name) : std::string(algorithm->name);
}

std::string Choice::describe() const { return shards > 1 ? fmt::format("{}#{}", name(), shards) : name(); }

const Spec& default_spec(Collective collective, Memory memory, const Layout& layout) {
  if (blockwise(collective)) {
    if (memory == Memory::cuda) return layout.nccl_world ? kCuda : kBlockwiseNodes;
    return layout.node_count > 1 ? kBlockwiseNodes : kOneNode;
  }
  if (memory == Memory::cuda) {
    if (collective != Collective::all_reduce || layout.node_count == 1)
      return layout.nccl_world ? kCuda : collective == Collective::all_reduce ? kCudaNoNccl : kRooted;
    if (layout.nccl_node) return layout.nccl_cross ? kCudaNodes : kCudaNcclInside;
    return layout.nccl_cross ? kCudaNcclAcross : kCudaNoNcclNodes;
  }
  if (collective != Collective::all_reduce) return layout.node_count > 1 ? kRootedNodes : kRootedOneNode;
  if (layout.modelled_all_reduce) return *layout.modelled_all_reduce;
  return layout.node_count > 1 ? kMultiNode : kOneNode;
}

const Spec& default_spec(Collective collective, Memory memory, int node_count) {
  return default_spec(collective, memory, Layout{.node_count = node_count, .local_size = 1});
}

Spec resolve_spec(std::string_view configured, Catalogue known) {
  if (!configured.empty()) return parse_spec(configured, known);
  if (const char* env = std::getenv("STRATA_SPEC"); env && *env) return parse_spec(env, known);
  if (const char* path = std::getenv("STRATA_SPEC_FILE"); path && *path) {
    std::ifstream file(path);
    if (!file) throw InvalidArgument(util::located(fmt::format("STRATA_SPEC_FILE = '{}' cannot be read", path)));
    // The file holds one spec; blank lines and lines starting with '#' are comments.
    std::string line, text;
    while (std::getline(file, line)) {
      const auto first = line.find_first_not_of(" \t\r");
      if (first == std::string::npos || line[first] == '#') continue;
      text += line.substr(first);
    }
    try {
      return parse_spec(text, known);
    } catch (const InvalidArgument& e) {
      throw InvalidArgument(util::located(fmt::format("STRATA_SPEC_FILE = '{}': {}", path, util::unlocated(e.what()))));
    }
  }
  return Spec{};
}

std::string describe_map(const Spec& spec, int node_count) {
  return describe_map(spec, Layout{.node_count = node_count, .local_size = 1});
}

std::string describe_map(const Spec& spec, const Layout& layout) {
  const Spec& effective = spec.is_auto() ? default_spec(Collective::all_reduce, Memory::host, layout) : spec;
  std::string text = !spec.is_auto()                ? "spec ="
                     : layout.modelled_all_reduce ? "auto (cost model) ="
                                                    : "auto =";
  long long lower = 0;
  for (const SpecEntry& e : effective.entries) {
    const std::string range = e.limit < 0 ? fmt::format("{} B and up", lower)
                                          : fmt::format("{} .. {} B", lower, e.limit);
    text += fmt::format(" [{}: {}{}]", range, e.algorithm, e.shards > 1 ? fmt::format("#{}", e.shards) : "");
    lower = e.limit + 1;
  }
  return text;
}

Choice choose(Catalogue known, const Spec& spec, Collective collective, std::size_t bytes,
              Implementation implementation, Memory memory, const Layout& layout) {
  if (implementation == Implementation::nccl && memory == Memory::host)
    throw InvalidArgument(
        util::located("implementation = nccl needs CUDA tensors, but this call's tensors are in host memory; "
                      "use automatic or ring for host tensors"));
  const Spec& defaults = default_spec(collective, memory, layout);
  const SpecEntry& entry = implementation == Implementation::ring   ? SpecEntry{"xring", 1, -1}
                           : implementation == Implementation::nccl ? kCuda.entries.front()
                           : spec.is_auto()                         ? defaults.select(bytes)
                                                                    : spec.select(bytes);
  Choice choice = from_entry(known, entry, collective, memory);
  if (!runs_on(choice.algorithm, memory) || !serves(*choice.algorithm, collective)) {
    // The host table serves every collective, on CUDA tensors through
    // pinned copies (a GPU algorithm that does not serve a rooted call).
    // CUDA tensors never run over the node's shared memory: a rooted call
    // takes the message-passing table there.
    const Spec& host_defaults = memory == Memory::cuda && rooted(collective)
                                    ? kRooted
                                    : default_spec(collective, Memory::host, layout.node_count);
    const Choice fallback = from_entry(known, host_defaults.select(bytes), collective, memory);
    util::log(util::LogLevel::trace, "{} of {} bytes: {} does not serve it, running {}", to_string(collective),
              bytes, choice.describe(), fallback.describe());
    choice = fallback;
  }
  if (choice.cross && layout.node_count > 1) choice.shape = Shape::hierarchical;
  choice.shared_memory = memory == Memory::host && choice.algorithm->shared_memory && layout.local_size > 1 &&
                         (choice.shape == Shape::hierarchical || layout.node_count == 1);
  return choice;
}

}  // namespace strata::plan

namespace strata::plan {

bool takes_canonical(const Layout& layout, Collective collective, Reduction reduction) {
  if (layout.reproducible == Reproducible::off || !reduces(collective) || !floating(reduction.dtype)) return false;
  const Numerics numerics{.reproducible = layout.reproducible};
  if (numerics.exact_sum(reduction.dtype, reduction.op)) return false;
  return layout.ranks > 2 || reduction.op == ReduceOp::min || reduction.op == ReduceOp::max;
}

Choice canonical_choice(Catalogue known) {
  Choice choice;
  choice.algorithm = find(known, "pscpu");
  if (!choice.algorithm)
    throw Unavailable(util::located("the reproducible modes reduce with pscpu, which this build does not register"));
  choice.shards = 1;  // every rank owns a slice
  choice.shape = Shape::flat;
  choice.shared_memory = false;  // the shared-memory rounds fold their own slice first
  return choice;
}

}  // namespace strata::plan
