#include "plan/select.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <fstream>
#include <string>

#include "core/log.hpp"
#include "strata/errors.hpp"

namespace strata::plan {
namespace {

// GPU algorithm names: valid in specs everywhere, served by the GPU backend.
constexpr std::array<std::string_view, 2> kGpuAlgorithms = {"nccl", "psgpu"};

// Defaults per collective on host memory, from the measurements in
// docs/ALGORITHMS.md. One node: shared-memory pscpu was fastest at every
// size from 8 B to 64 MiB. Several nodes: shared memory inside the node,
// latency-bound recursive halving-doubling across nodes for small messages,
// slice owners for medium and the pipelined ring for large ones. Reduce and
// broadcast: a binomial tree while latency dominates, the pipelined ring
// above.
const char* const kDefaultOneNode = "pscpu";
const char* const kDefaultMultiNode = "pscpu/rechd:64k:pscpu/pscpu:16M:pscpu/xring";
const char* const kDefaultRooted = "tree:64k:xring";

host::CollectiveFn entry_point(const host::Algorithm& algorithm, Collective collective) {
  switch (collective) {
    case Collective::all_reduce: return algorithm.all_reduce;
    case Collective::reduce: return algorithm.reduce;
    case Collective::broadcast: return algorithm.broadcast;
  }
  return nullptr;
}

std::string_view intra_level(std::string_view name) { return name.substr(0, name.find('/')); }
std::string_view cross_level(std::string_view name) {
  const auto slash = name.find('/');
  return slash == std::string_view::npos ? std::string_view() : name.substr(slash + 1);
}

const Spec& default_spec_for(Collective collective, int node_count) {
  static const Spec rooted = parse_spec(kDefaultRooted, is_known_algorithm);
  return collective == Collective::all_reduce ? default_host_spec(node_count) : rooted;
}

Choice from_entry(const SpecEntry& entry, Collective collective) {
  Choice choice{host::find_algorithm(intra_level(entry.algorithm)), entry.shards, nullptr};
  if (collective == Collective::all_reduce && !cross_level(entry.algorithm).empty())
    choice.cross = host::find_algorithm(cross_level(entry.algorithm));
  return choice;
}

}  // namespace

std::string Choice::describe() const {
  if (!algorithm) return "none";
  std::string name(algorithm->name);
  if (cross) name += fmt::format("/{}", cross->name);
  return shards > 1 ? fmt::format("{}#{}", name, shards) : name;
}

bool is_known_algorithm(std::string_view name) {
  return host::find_algorithm(name) != nullptr ||
         std::find(kGpuAlgorithms.begin(), kGpuAlgorithms.end(), name) != kGpuAlgorithms.end();
}

const Spec& default_host_spec(int node_count) {
  static const Spec one_node = parse_spec(kDefaultOneNode, is_known_algorithm);
  static const Spec multi_node = parse_spec(kDefaultMultiNode, is_known_algorithm);
  return node_count > 1 ? multi_node : one_node;
}

Spec resolve_spec(std::string_view configured) {
  if (!configured.empty()) return parse_spec(configured, is_known_algorithm);
  if (const char* env = std::getenv("STRATA_SPEC"); env && *env) return parse_spec(env, is_known_algorithm);
  if (const char* path = std::getenv("STRATA_SPEC_FILE"); path && *path) {
    std::ifstream file(path);
    if (!file) throw InvalidArgument(fmt::format("STRATA_SPEC_FILE = '{}' cannot be read", path));
    // The file holds one spec; blank lines and lines starting with '#' are comments.
    std::string line, text;
    while (std::getline(file, line)) {
      const auto first = line.find_first_not_of(" \t\r");
      if (first == std::string::npos || line[first] == '#') continue;
      text += line.substr(first);
    }
    try {
      return parse_spec(text, is_known_algorithm);
    } catch (const InvalidArgument& e) {
      throw InvalidArgument(fmt::format("STRATA_SPEC_FILE = '{}': {}", path, e.what()));
    }
  }
  return Spec{};
}

std::string describe_map(const Spec& spec, int node_count) {
  const Spec& effective = spec.is_auto() ? default_host_spec(node_count) : spec;
  std::string text = spec.is_auto() ? "auto =" : "spec =";
  long long lower = 0;
  for (const SpecEntry& e : effective.entries) {
    const std::string range = e.limit < 0 ? fmt::format("{} B and up", lower)
                                          : fmt::format("{} .. {} B", lower, e.limit);
    text += fmt::format(" [{}: {}{}]", range, e.algorithm, e.shards > 1 ? fmt::format("#{}", e.shards) : "");
    lower = e.limit + 1;
  }
  return text;
}

Choice choose(const Spec& spec, Collective collective, std::size_t bytes, Implementation implementation,
              int node_count) {
  if (implementation == Implementation::nccl)
    throw InvalidArgument(
        "implementation = nccl needs CUDA tensors, but this call's tensors are in host memory; "
        "use automatic or ring for host tensors");
  const Spec& defaults = default_spec_for(collective, node_count);
  Choice choice = implementation == Implementation::ring ? Choice{host::find_algorithm("xring"), 1, nullptr}
                  : spec.is_auto()                       ? from_entry(defaults.select(bytes), collective)
                                                         : from_entry(spec.select(bytes), collective);
  if (!choice.algorithm || !entry_point(*choice.algorithm, collective)) {
    const Choice fallback = from_entry(defaults.select(bytes), collective);
    core::log(core::LogLevel::trace, "{} of {} bytes: the spec's algorithm does not serve it, running {}",
              to_string(collective), bytes, fallback.describe());
    choice = fallback;
  }
  return choice;
}

}  // namespace strata::plan
