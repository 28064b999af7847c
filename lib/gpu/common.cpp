// The parts of the GPU seam that need no CUDA: compiled in every build.
#include <fmt/format.h>

#include <charconv>

#include "gpu/backend.hpp"
#include "host/algorithm.hpp"
#include "strata/errors.hpp"

namespace strata::gpu {

Backend::~Backend() = default;

bool serves_natively(std::string_view algorithm) {
  const auto slash = algorithm.find('/');
  const std::string_view intra = algorithm.substr(0, slash);
  if (intra != "nccl" && intra != "psgpu") return false;
  if (slash == std::string_view::npos) return true;
  const std::string_view cross = algorithm.substr(slash + 1);
  return cross == "nccl" || host::find_algorithm(cross) != nullptr;
}

std::vector<int> parse_gpu_map(std::string_view text) {
  std::vector<int> map;
  if (text.empty()) return map;
  std::size_t at = 0;
  while (true) {
    const std::size_t comma = std::min(text.find(',', at), text.size());
    const std::string_view item = text.substr(at, comma - at);
    int device = -1;
    const auto [end, error] = std::from_chars(item.data(), item.data() + item.size(), device);
    if (item.empty() || error != std::errc() || end != item.data() + item.size() || device < 0)
      throw InvalidArgument(fmt::format(
          "STRATA_GPU_MAP = '{}': '{}' is not a device index; expected comma-separated indexes by local rank, "
          "e.g. \"0,1,2,3\"",
          text, item));
    map.push_back(device);
    if (comma == text.size()) break;
    at = comma + 1;
  }
  return map;
}

}  // namespace strata::gpu
