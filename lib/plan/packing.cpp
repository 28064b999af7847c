#include "plan/packing.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "util/slice.hpp"
#include "strata/errors.hpp"
#include "util/where.hpp"

namespace strata::plan {
namespace {

// See automatic_bytes_per_pack.
constexpr std::size_t kAutoPackOneNode = 64 * 1024;
constexpr std::size_t kAutoPackMultiNode = 1024 * 1024;

// Tensor indices grouped by dtype, each group in input order, groups in
// order of first appearance.
std::vector<std::vector<std::size_t>> by_dtype(std::span<const TensorShape> tensors) {
  std::vector<std::vector<std::size_t>> groups;
  std::map<DataType, std::size_t> group_of;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    if (tensors[i].count == 0) continue;
    auto [it, fresh] = group_of.try_emplace(tensors[i].dtype, groups.size());
    if (fresh) groups.emplace_back();
    groups[it->second].push_back(i);
  }
  return groups;
}

void add_whole(Pack& pack, std::size_t index, const TensorShape& t) {
  pack.pieces.push_back({index, 0, t.count});
  pack.count += t.count;
}

// num_packs: the group's elements, concatenated, cut into n nearly equal
// ranges (fewer if there are fewer elements than packs).
void split_evenly(std::vector<Pack>& out, std::span<const TensorShape> tensors, const std::vector<std::size_t>& group,
                  std::size_t num_packs) {
  std::size_t total = 0;
  for (std::size_t i : group) total += tensors[i].count;
  const std::size_t packs = std::min(num_packs, total);
  std::size_t tensor_pos = 0, within = 0;  // cursor into the concatenation
  for (std::size_t p = 0; p < packs; ++p) {
    Pack pack{tensors[group[0]].dtype, {}, 0};
    std::size_t need = util::even_slice(total, packs, p).count;
    while (need > 0) {
      const std::size_t index = group[tensor_pos];
      const std::size_t take = std::min(need, tensors[index].count - within);
      pack.pieces.push_back({index, within, take});
      pack.count += take;
      need -= take;
      within += take;
      if (within == tensors[index].count) ++tensor_pos, within = 0;
    }
    out.push_back(std::move(pack));
  }
}

// Greedy: start a new pack when adding the next tensor would pass `limit`
// bytes or `max_group` tensors; `small` decides which tensors may share.
template <typename Small>
void greedy(std::vector<Pack>& out, std::span<const TensorShape> tensors, const std::vector<std::size_t>& group,
            std::size_t limit, std::size_t max_group, Small small) {
  Pack current{tensors[group[0]].dtype, {}, 0};
  auto flush = [&] {
    if (!current.pieces.empty()) out.push_back(std::move(current));
    current = Pack{tensors[group[0]].dtype, {}, 0};
  };
  for (std::size_t index : group) {
    const TensorShape& t = tensors[index];
    const std::size_t bytes = t.count * dtype_size(t.dtype);
    if (!small(bytes)) {  // goes alone
      flush();
      add_whole(current, index, t);
      flush();
      continue;
    }
    if (!current.pieces.empty() && (current.bytes() + bytes > limit || current.pieces.size() >= max_group)) flush();
    add_whole(current, index, t);
  }
  flush();
}

}  // namespace

void validate_packing(const PackingOptions& options) {
  if (options.num_packs < 0)
    throw InvalidArgument(
        util::located(fmt::format("num_packs = {} must be >= 0 (0 = use bytes_per_pack)", options.num_packs)));
  if (options.agg_small_grads_max_bytes < 0)
    throw InvalidArgument(
        util::located(fmt::format("agg_small_grads_max_bytes = {} must be >= 0", options.agg_small_grads_max_bytes)));
  if (options.agg_small_grads_max_group < 0)
    throw InvalidArgument(
        util::located(fmt::format("agg_small_grads_max_group = {} must be >= 0", options.agg_small_grads_max_group)));
}

std::size_t automatic_bytes_per_pack(int node_count) {
  return node_count > 1 ? kAutoPackMultiNode : kAutoPackOneNode;
}

std::vector<Pack> make_packs(std::span<const TensorShape> tensors, const PackingOptions& options,
                             std::size_t bytes_per_pack) {
  std::vector<Pack> packs;
  const bool aggregate = options.agg_small_grads_max_bytes > 0 && options.agg_small_grads_max_group > 0;
  for (const auto& group : by_dtype(tensors)) {
    if (options.num_packs > 0) {
      split_evenly(packs, tensors, group, static_cast<std::size_t>(options.num_packs));
    } else if (aggregate) {
      const auto max_bytes = static_cast<std::size_t>(options.agg_small_grads_max_bytes);
      greedy(packs, tensors, group, SIZE_MAX, static_cast<std::size_t>(options.agg_small_grads_max_group),
             [&](std::size_t bytes) { return bytes <= max_bytes; });
    } else {
      greedy(packs, tensors, group, std::max<std::size_t>(1, bytes_per_pack), SIZE_MAX,
             [&](std::size_t bytes) { return bytes <= bytes_per_pack; });
    }
  }
  std::stable_sort(packs.begin(), packs.end(), [](const Pack& a, const Pack& b) {
    return a.pieces.front().tensor < b.pieces.front().tensor;
  });
  return packs;
}

std::string describe(std::span<const Pack> packs) {
  std::string text = fmt::format("{} pack(s):", packs.size());
  for (const Pack& p : packs)
    text += fmt::format(" [{} {} piece(s) {} B]", to_string(p.dtype), p.pieces.size(), p.bytes());
  return text;
}

}  // namespace strata::plan
