#include "exec/registry.hpp"

#include <array>

#include "strata/spec.hpp"

#define STRATA_ALGORITHM(backend, name) \
  namespace strata::backend {           \
  extern const Algorithm name;          \
  }
#include "exec/algorithms.def"
#undef STRATA_ALGORITHM

namespace strata::exec {
namespace {

const Entry kRegistry[] = {
#define STRATA_ALGORITHM(backend, name) Entry(backend::name),
#include "exec/algorithms.def"
#undef STRATA_ALGORITHM
};

constexpr std::size_t kCount = std::size(kRegistry);

const std::array<const plan::Algorithm*, kCount> kCatalogue = [] {
  std::array<const plan::Algorithm*, kCount> infos{};
  for (std::size_t i = 0; i < kCount; ++i) infos[i] = kRegistry[i].info;
  return infos;
}();

}  // namespace

std::span<const Entry> registry() { return kRegistry; }

plan::Catalogue catalogue() { return kCatalogue; }

const Entry& entry_of(const plan::Algorithm& algorithm) {
  for (const Entry& entry : kRegistry)
    if (entry.info == &algorithm) return entry;
  return kRegistry[0];  // unreachable for catalogue() pointers
}

// registered_algorithms' graph_capture says the same of a plan of one algorithm.
bool host_stages(const plan::Choice& choice) {
  const auto device_only = [](const plan::Algorithm* algorithm) {
    return algorithm && entry_of(*algorithm).gpu && algorithm->nccl;
  };
  if (!device_only(choice.algorithm)) return true;
  return choice.shape == plan::Shape::hierarchical && !device_only(choice.cross);
}

}  // namespace strata::exec

namespace strata::model {

const Formula* formula_of(std::string_view name) {
  const plan::Algorithm* algorithm = plan::find(exec::catalogue(), name);
  return algorithm ? &algorithm->model : nullptr;
}

}  // namespace strata::model

namespace strata {

std::vector<AlgorithmInfo> registered_algorithms() {
  std::vector<AlgorithmInfo> list;
  for (const exec::Entry& entry : exec::registry())
    list.push_back({std::string(entry.info->name), entry.info->memory, entry.info->reduce, entry.info->broadcast,
                    entry.info->shared_memory, entry.info->shards, entry.gpu && entry.info->nccl,
                    std::string(entry.info->description)});
  return list;
}

}  // namespace strata
