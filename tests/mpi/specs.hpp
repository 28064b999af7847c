// Which all_reduce_specs the MPI tests force: "auto", every registered host
// algorithm (read from the registry through the public
// strata::registered_algorithms, so algorithms added later are covered
// without touching the tests) and the shard variants of those that shard.
#pragma once

#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "strata/spec.hpp"

namespace strata::test {

// The registered algorithms that run on host memory.
inline std::vector<std::string> algorithm_names() {
  std::vector<std::string> names;
  for (const AlgorithmInfo& algorithm : registered_algorithms())
    if (algorithm.memory == Memory::host) names.push_back(algorithm.name);
  return names;
}

inline bool registered(const std::string& name) {
  for (const std::string& known : algorithm_names())
    if (known == name) return true;
  return false;
}

// STRATA_TEST_SPECS="xring,xring#2" restricts the run to those specs (for
// working on one algorithm); unset means all of them.
inline std::vector<std::string> only_requested(std::vector<std::string> specs) {
  const char* env = std::getenv("STRATA_TEST_SPECS");
  if (!env || !*env) return specs;
  std::vector<std::string> wanted, kept;
  std::stringstream list(env);
  for (std::string item; std::getline(list, item, ',');) wanted.push_back(item);
  for (const std::string& spec : specs)
    for (const std::string& w : wanted)
      if (spec == w) kept.push_back(spec);
  return kept;
}

inline std::vector<std::string> all_reduce_specs() {
  std::vector<std::string> specs = {"auto"};
  for (const std::string& name : algorithm_names()) specs.push_back(name);
  for (const char* variant : {"xring#2", "xring#3", "rechd#2", "pscpu#2"}) {
    const std::string base = std::string(variant).substr(0, std::string(variant).find('#'));
    if (registered(base)) specs.emplace_back(variant);
  }
  return only_requested(specs);
}

}  // namespace strata::test
