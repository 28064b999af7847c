// strata::Plan's printable form.
#include <fmt/format.h>

#include "strata/plan.hpp"
#include "util/ranges.hpp"

namespace strata {
namespace {

std::string bytes_text(std::size_t bytes) {
  if (bytes >= (std::size_t{1} << 20)) return fmt::format("{:.1f} MiB", double(bytes) / double(1 << 20));
  if (bytes >= 1024) return fmt::format("{:.1f} KiB", double(bytes) / 1024.0);
  return fmt::format("{} B", bytes);
}

}  // namespace

std::string Plan::to_string() const {
  std::string text =
      fmt::format("{} in {} pack(s), {} memory", strata::to_string(collective), packs.size(), strata::to_string(memory));
  for (std::size_t p = 0; p < packs.size(); ++p) {
    const PlannedPack& pack = packs[p];
    text += fmt::format("\n  pack {}: {} x {} ({}), tensor{} {}: {}", p, strata::to_string(pack.dtype), pack.count,
                        bytes_text(pack.bytes), pack.tensors.size() == 1 ? "" : "s", util::ranges(pack.tensors),
                        pack.algorithm);
  }
  return text;
}

}  // namespace strata
