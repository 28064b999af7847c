// plan/packing: make_packs (num_packs, bytes_per_pack, small-gradient
// aggregation, their precedence, dtypes, zero-element tensors, exact
// coverage, pack order), automatic_bytes_per_pack and validate_packing.
// Single process, no MPI: a packing is a plain value.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "check_throws.hpp"
#include "plan/packing.hpp"
#include "strata/errors.hpp"

using strata::DataType;
using strata::dtype_size;
using strata::InvalidArgument;
using strata::PackingOptions;
using strata::plan::make_packs;
using strata::plan::Pack;
using strata::plan::TensorShape;

namespace {

constexpr DataType kAllTypes[] = {DataType::f32, DataType::f64, DataType::f16, DataType::bf16, DataType::i8,
                                  DataType::u8,  DataType::i32, DataType::u32, DataType::i64,  DataType::u64};

std::size_t bytes_of(const TensorShape& t) { return t.count * dtype_size(t.dtype); }

std::string show(const std::vector<Pack>& packs) {
  std::string text;
  for (const Pack& p : packs) {
    // Appended piece by piece: GCC 12 warns (-Wrestrict, a false positive)
    // on "literal" + std::string once this is inlined into doctest's code.
    text.append("[").append(strata::to_string(p.dtype));
    for (const auto& piece : p.pieces)
      text.append(" t").append(std::to_string(piece.tensor)).append("@").append(std::to_string(piece.offset))
          .append("+").append(std::to_string(piece.count));
    text += "] ";
  }
  return text;
}

// The tensors each pack carries, whole-tensor packings only.
std::vector<std::vector<std::size_t>> tensors_of(const std::vector<Pack>& packs) {
  std::vector<std::vector<std::size_t>> out;
  for (const Pack& p : packs) {
    out.emplace_back();
    for (const auto& piece : p.pieces) out.back().push_back(piece.tensor);
  }
  return out;
}

// The invariants every packing satisfies, whatever the rule: each element of
// each tensor lies in exactly one pack, zero-element tensors in none; a pack
// holds one dtype, its count is the sum of its pieces, its pieces are in
// input order and non-empty; packs are ordered by their first tensor, and
// within a dtype the packs follow the concatenation order.
void check_invariants(const std::vector<TensorShape>& tensors, const std::vector<Pack>& packs) {
  CAPTURE(show(packs));
  std::vector<std::vector<int>> covered(tensors.size());
  for (std::size_t i = 0; i < tensors.size(); ++i) covered[i].assign(tensors[i].count, 0);
  std::size_t previous_first = 0;
  for (std::size_t p = 0; p < packs.size(); ++p) {
    const Pack& pack = packs[p];
    CAPTURE(p);
    REQUIRE_FALSE(pack.pieces.empty());
    CHECK(pack.count > 0);
    std::size_t sum = 0;
    for (std::size_t k = 0; k < pack.pieces.size(); ++k) {
      const auto& piece = pack.pieces[k];
      REQUIRE(piece.tensor < tensors.size());
      CHECK(tensors[piece.tensor].dtype == pack.dtype);
      CHECK(piece.count > 0);
      REQUIRE(piece.offset + piece.count <= tensors[piece.tensor].count);
      for (std::size_t e = piece.offset; e < piece.offset + piece.count; ++e) ++covered[piece.tensor][e];
      sum += piece.count;
      if (k > 0) {
        const auto& before = pack.pieces[k - 1];
        const bool in_order = before.tensor < piece.tensor ||
                              (before.tensor == piece.tensor && before.offset + before.count <= piece.offset);
        CHECK_MESSAGE(in_order, "pieces of pack " << p << " are not in input order");
      }
    }
    CHECK(sum == pack.count);
    CHECK(pack.bytes() == pack.count * dtype_size(pack.dtype));
    if (p > 0) CHECK_MESSAGE(previous_first <= pack.pieces.front().tensor, "packs are not ordered by first tensor");
    previous_first = pack.pieces.front().tensor;
  }
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const auto bad = std::find_if(covered[i].begin(), covered[i].end(), [](int c) { return c != 1; });
    CHECK_MESSAGE(bad == covered[i].end(), "tensor " << i << " element " << (bad - covered[i].begin()) << " is in "
                                                     << (bad == covered[i].end() ? 1 : *bad) << " packs");
  }
  // Within one dtype, the packs cover the concatenation in order.
  for (DataType dtype : kAllTypes) {
    std::size_t last_tensor = 0, last_end = 0;
    bool first = true;
    for (const Pack& pack : packs) {
      if (pack.dtype != dtype) continue;
      const auto& head = pack.pieces.front();
      if (!first)
        CHECK_MESSAGE((head.tensor > last_tensor || (head.tensor == last_tensor && head.offset >= last_end)),
                      "packs of " << strata::to_string(dtype) << " are out of concatenation order");
      first = false;
      last_tensor = pack.pieces.back().tensor;
      last_end = pack.pieces.back().offset + pack.pieces.back().count;
    }
  }
}

std::vector<TensorShape> f32s(std::initializer_list<std::size_t> counts) {
  std::vector<TensorShape> out;
  for (std::size_t c : counts) out.push_back({c, DataType::f32});
  return out;
}

PackingOptions num_packs(int n) { return PackingOptions{.num_packs = n}; }
PackingOptions aggregate(long long max_bytes, int max_group) {
  return PackingOptions{.num_packs = 0, .agg_small_grads_max_bytes = max_bytes, .agg_small_grads_max_group = max_group};
}

}  // namespace

TEST_CASE("num_packs: n nearly equal packs per dtype over the concatenation, splitting tensors") {
  SUBCASE("one tensor") {
    const auto tensors = f32s({10});
    const auto packs = make_packs(tensors, num_packs(3), 1 << 20);
    check_invariants(tensors, packs);
    REQUIRE(packs.size() == 3);
    std::vector<std::size_t> sizes;
    for (const Pack& p : packs) sizes.push_back(p.count);
    CHECK(*std::max_element(sizes.begin(), sizes.end()) - *std::min_element(sizes.begin(), sizes.end()) <= 1);
    CHECK(packs[0].count + packs[1].count + packs[2].count == 10);
  }
  SUBCASE("three tensors into two packs: the middle tensor is split") {
    const auto tensors = f32s({5, 5, 5});
    const auto packs = make_packs(tensors, num_packs(2), 1 << 20);
    check_invariants(tensors, packs);
    REQUIRE(packs.size() == 2);
    CHECK(packs[0].count + packs[1].count == 15);
    CHECK((packs[0].count == 8 || packs[0].count == 7));
    // Tensor 1 appears in both packs.
    CHECK(packs[0].pieces.back().tensor == 1);
    CHECK(packs[1].pieces.front().tensor == 1);
    CHECK(packs[1].pieces.front().offset > 0);
  }
  SUBCASE("num_packs = 1 concatenates everything of a dtype") {
    const auto tensors = f32s({3, 1, 4, 1, 5});
    const auto packs = make_packs(tensors, num_packs(1), 1);
    check_invariants(tensors, packs);
    REQUIRE(packs.size() == 1);
    CHECK(packs[0].count == 14);
    CHECK(packs[0].pieces.size() == 5);
  }
  SUBCASE("fewer elements than packs: one pack per element") {
    const auto tensors = f32s({1, 1});
    const auto packs = make_packs(tensors, num_packs(5), 1 << 20);
    check_invariants(tensors, packs);
    CHECK(packs.size() == 2);
    for (const Pack& p : packs) CHECK(p.count == 1);
  }
  SUBCASE("per dtype: n packs for each dtype, no pack mixes them") {
    const std::vector<TensorShape> tensors = {{100, DataType::f32}, {7, DataType::f64}, {50, DataType::f32},
                                              {9, DataType::f64}, {1, DataType::i8}};
    const auto packs = make_packs(tensors, num_packs(3), 1 << 20);
    check_invariants(tensors, packs);
    std::size_t f32 = 0, f64 = 0, i8 = 0;
    for (const Pack& p : packs) {
      f32 += p.dtype == DataType::f32;
      f64 += p.dtype == DataType::f64;
      i8 += p.dtype == DataType::i8;
    }
    CHECK(f32 == 3);
    CHECK(f64 == 3);
    CHECK(i8 == 1);  // one element: one pack
    CHECK(packs.size() == 7);
  }
  SUBCASE("the byte target is ignored") {
    const auto tensors = f32s({1000, 1000});
    CHECK(make_packs(tensors, num_packs(4), 4).size() == 4);
    CHECK(make_packs(tensors, num_packs(1), 4).size() == 1);
  }
}

TEST_CASE("bytes_per_pack: a new pack when the current one would exceed b; a larger tensor goes alone") {
  SUBCASE("greedy by bytes") {
    const auto tensors = f32s({100, 100, 100});  // 400 B each
    const auto packs = make_packs(tensors, {}, 1000);
    check_invariants(tensors, packs);
    CHECK(tensors_of(packs) == std::vector<std::vector<std::size_t>>{{0, 1}, {2}});
  }
  SUBCASE("exactly b still fits; one byte over does not") {
    const std::vector<TensorShape> exact = {{250, DataType::f32}, {250, DataType::f32}};
    CHECK(tensors_of(make_packs(exact, {}, 2000)) == std::vector<std::vector<std::size_t>>{{0, 1}});
    const std::vector<TensorShape> over = {{1000, DataType::u8}, {1001, DataType::u8}};
    CHECK(tensors_of(make_packs(over, {}, 2000)) == std::vector<std::vector<std::size_t>>{{0}, {1}});
    const std::vector<TensorShape> fits = {{1000, DataType::u8}, {1000, DataType::u8}};
    CHECK(tensors_of(make_packs(fits, {}, 2000)) == std::vector<std::vector<std::size_t>>{{0, 1}});
  }
  SUBCASE("a tensor larger than b goes alone, never split") {
    const auto tensors = f32s({25, 500, 25, 25});  // 100, 2000, 100, 100 bytes
    const auto packs = make_packs(tensors, {}, 1000);
    check_invariants(tensors, packs);
    CHECK(tensors_of(packs) == std::vector<std::vector<std::size_t>>{{0}, {1}, {2, 3}});
    REQUIRE(packs.size() == 3);
    CHECK(packs[1].pieces.size() == 1);
    CHECK(packs[1].pieces[0].offset == 0);
    CHECK(packs[1].pieces[0].count == 500);
  }
  SUBCASE("b is counted in bytes, not elements") {
    const std::vector<TensorShape> tensors = {{100, DataType::f64}, {100, DataType::f64}};  // 800 B each
    CHECK(make_packs(tensors, {}, 1000).size() == 2);
    CHECK(make_packs(tensors, {}, 1600).size() == 1);
    const std::vector<TensorShape> bytes = {{100, DataType::i8}, {100, DataType::i8}};  // 100 B each
    CHECK(make_packs(bytes, {}, 200).size() == 1);
  }
  SUBCASE("many small tensors fill packs up to b") {
    std::vector<TensorShape> tensors(100, TensorShape{16, DataType::f32});  // 64 B each
    const auto packs = make_packs(tensors, {}, 640);
    check_invariants(tensors, packs);
    CHECK(packs.size() == 10);
    for (const Pack& p : packs) CHECK(p.bytes() == 640);
  }
}

TEST_CASE("agg_small_grads: runs of small tensors, at most max_group per pack; large ones alone") {
  SUBCASE("runs broken by a large tensor and by max_group") {
    // bytes: 40 40 40 40 200 40 40
    const auto tensors = f32s({10, 10, 10, 10, 50, 10, 10});
    const auto packs = make_packs(tensors, aggregate(100, 3), 1 << 30);
    check_invariants(tensors, packs);
    CHECK(tensors_of(packs) == std::vector<std::vector<std::size_t>>{{0, 1, 2}, {3}, {4}, {5, 6}});
  }
  SUBCASE("a tensor of exactly max_bytes is small") {
    const auto tensors = f32s({25, 25, 26});  // 100, 100, 104 bytes
    CHECK(tensors_of(make_packs(tensors, aggregate(100, 10), 1 << 30)) ==
          std::vector<std::vector<std::size_t>>{{0, 1}, {2}});
  }
  SUBCASE("aggregation is not bounded by bytes_per_pack") {
    std::vector<TensorShape> tensors(50, TensorShape{64, DataType::f32});  // 256 B each
    const auto packs = make_packs(tensors, aggregate(256, 100), 300);
    check_invariants(tensors, packs);
    CHECK(packs.size() == 1);
  }
  SUBCASE("max_group = 1 puts every tensor alone") {
    const auto tensors = f32s({1, 2, 3, 4});
    CHECK(make_packs(tensors, aggregate(1 << 20, 1), 1 << 30).size() == 4);
  }
  SUBCASE("both fields must be > 0; otherwise bytes_per_pack applies") {
    const auto tensors = f32s({10, 10, 10, 10});  // 40 B each
    // bytes_per_pack = 80: pairs.
    const std::vector<std::vector<std::size_t>> by_bytes = {{0, 1}, {2, 3}};
    CHECK(tensors_of(make_packs(tensors, aggregate(0, 10), 80)) == by_bytes);
    CHECK(tensors_of(make_packs(tensors, aggregate(100, 0), 80)) == by_bytes);
    CHECK(tensors_of(make_packs(tensors, aggregate(0, 0), 80)) == by_bytes);
    // Both > 0: groups of three, whatever bytes_per_pack says.
    CHECK(tensors_of(make_packs(tensors, aggregate(100, 3), 80)) ==
          std::vector<std::vector<std::size_t>>{{0, 1, 2}, {3}});
  }
}

TEST_CASE("precedence: num_packs > 0 wins over aggregation, aggregation over bytes_per_pack") {
  const auto tensors = f32s({10, 10, 10, 10, 10, 10});  // 40 B each
  PackingOptions both = aggregate(100, 2);
  both.num_packs = 1;
  CHECK(make_packs(tensors, both, 40).size() == 1);  // num_packs
  both.num_packs = 4;
  CHECK(make_packs(tensors, both, 40).size() == 4);
  both.num_packs = 0;
  CHECK(tensors_of(make_packs(tensors, both, 40)) ==
        std::vector<std::vector<std::size_t>>{{0, 1}, {2, 3}, {4, 5}});  // aggregation, not 6 packs of 40 B
  CHECK(make_packs(tensors, PackingOptions{}, 40).size() == 6);        // bytes_per_pack
  CHECK(make_packs(tensors, PackingOptions{}, 1 << 20).size() == 1);
}

TEST_CASE("mixed dtypes never share a pack, under every rule") {
  std::vector<TensorShape> tensors;
  for (int round = 0; round < 3; ++round)
    for (DataType d : kAllTypes) tensors.push_back({static_cast<std::size_t>(3 + round), d});
  for (const PackingOptions& options : {PackingOptions{}, num_packs(1), num_packs(2), aggregate(1 << 20, 100)}) {
    CAPTURE(options.num_packs);
    CAPTURE(options.agg_small_grads_max_bytes);
    const auto packs = make_packs(tensors, options, 1 << 20);
    check_invariants(tensors, packs);
    std::set<DataType> seen;
    for (const Pack& p : packs) seen.insert(p.dtype);
    CHECK(seen.size() == 10);
    if (options.num_packs == 1 || options.agg_small_grads_max_bytes > 0 || options.num_packs == 0)
      CHECK(packs.size() == 10);  // everything of a dtype fits one pack
    // Ordered by first tensor: the dtypes in order of first appearance.
    for (std::size_t p = 0; p < 10 && p < packs.size(); ++p)
      if (options.num_packs != 2) CHECK(packs[p].dtype == kAllTypes[p]);
  }
}

TEST_CASE("zero-element tensors join no pack; an empty list gives no packs") {
  const std::vector<TensorShape> tensors = {
      {0, DataType::f32}, {4, DataType::f32}, {0, DataType::f64}, {0, DataType::f32}, {4, DataType::f32}, {0, DataType::i8}};
  for (const PackingOptions& options : {PackingOptions{}, num_packs(3), aggregate(1 << 20, 10)}) {
    const auto packs = make_packs(tensors, options, 1 << 20);
    check_invariants(tensors, packs);
    for (const Pack& p : packs)
      for (const auto& piece : p.pieces) CHECK(tensors[piece.tensor].count > 0);
  }
  // A zero-element tensor is not "large": it does not break a run.
  CHECK(make_packs(tensors, {}, 1 << 20).size() == 1);
  CHECK(make_packs(tensors, aggregate(100, 2), 1 << 20).size() == 1);
  const std::vector<TensorShape> none = {{0, DataType::f32}, {0, DataType::u64}};
  CHECK(make_packs(none, {}, 1 << 20).empty());
  CHECK(make_packs(none, num_packs(4), 1 << 20).empty());
  CHECK(make_packs(none, aggregate(10, 10), 1 << 20).empty());
  CHECK(make_packs(std::vector<TensorShape>{}, {}, 1 << 20).empty());
  CHECK(make_packs(std::vector<TensorShape>{}, num_packs(2), 1 << 20).empty());
}

TEST_CASE("packs are ordered by their first tensor across dtypes") {
  // f64 tensor 1 starts before f32 tensor 2 although f32 appeared first.
  const std::vector<TensorShape> tensors = {
      {10, DataType::f32}, {10, DataType::f64}, {300, DataType::f32}, {10, DataType::f64}, {10, DataType::f32}};
  const auto packs = make_packs(tensors, {}, 100);  // 40, 80, 1200 (alone), 80, 40 bytes
  check_invariants(tensors, packs);
  std::vector<std::size_t> firsts;
  for (const Pack& p : packs) firsts.push_back(p.pieces.front().tensor);
  CHECK(std::is_sorted(firsts.begin(), firsts.end()));
  CHECK(firsts.front() == 0);
}

TEST_CASE("random shapes and options: invariants and each rule's own properties") {
  std::mt19937_64 rng(20240611);
  for (int trial = 0; trial < 400; ++trial) {
    CAPTURE(trial);
    std::vector<TensorShape> tensors(rng() % 60);
    for (auto& t : tensors) {
      const auto kind = rng() % 10;
      t.count = kind == 0 ? 0 : kind < 7 ? rng() % 300 : rng() % 20000;
      t.dtype = kAllTypes[rng() % 10];
    }
    PackingOptions options;
    const auto rule = rng() % 3;
    if (rule == 0) options.num_packs = 1 + static_cast<int>(rng() % 12);
    if (rule == 1) options = aggregate(1 + static_cast<long long>(rng() % 4096), 1 + static_cast<int>(rng() % 12));
    const std::size_t b = 1 + rng() % 8192;
    CAPTURE(rule);
    CAPTURE(b);
    const auto packs = make_packs(tensors, options, b);
    check_invariants(tensors, packs);
    for (DataType dtype : kAllTypes) {
      std::size_t total = 0;
      for (const auto& t : tensors)
        if (t.dtype == dtype) total += t.count;
      std::vector<const Pack*> mine;
      for (const Pack& p : packs)
        if (p.dtype == dtype) mine.push_back(&p);
      if (total == 0) {
        CHECK(mine.empty());
        continue;
      }
      if (rule == 0) {
        CHECK(mine.size() == std::min<std::size_t>(total, static_cast<std::size_t>(options.num_packs)));
        std::size_t lo = SIZE_MAX, hi = 0;
        for (const Pack* p : mine) lo = std::min(lo, p->count), hi = std::max(hi, p->count);
        CHECK(hi - lo <= 1);
        continue;
      }
      // Whole tensors only, and maximal greedy packs.
      const std::size_t limit = rule == 1 ? SIZE_MAX : b;
      const std::size_t small_max = rule == 1 ? static_cast<std::size_t>(options.agg_small_grads_max_bytes) : b;
      const std::size_t group_max = rule == 1 ? static_cast<std::size_t>(options.agg_small_grads_max_group) : SIZE_MAX;
      auto alone_large = [&](const Pack* p) {
        return p->pieces.size() == 1 && bytes_of(tensors[p->pieces[0].tensor]) > small_max;
      };
      for (std::size_t k = 0; k < mine.size(); ++k) {
        const Pack* p = mine[k];
        for (const auto& piece : p->pieces) {
          CHECK(piece.offset == 0);
          CHECK(piece.count == tensors[piece.tensor].count);
        }
        if (!alone_large(p)) {
          CHECK(p->bytes() <= limit);
          CHECK(p->pieces.size() <= group_max);
          for (const auto& piece : p->pieces) CHECK(bytes_of(tensors[piece.tensor]) <= small_max);
        }
        if (k + 1 < mine.size()) {
          const Pack* q = mine[k + 1];
          const bool next_large = bytes_of(tensors[q->pieces[0].tensor]) > small_max;
          const bool full = p->bytes() + bytes_of(tensors[q->pieces[0].tensor]) > limit || p->pieces.size() >= group_max;
          CHECK_MESSAGE((alone_large(p) || next_large || full), "pack " << k << " of " << strata::to_string(dtype)
                                                                        << " could have taken the next tensor");
        }
      }
    }
  }
}

TEST_CASE("automatic_bytes_per_pack: small packs on one node, larger across nodes") {
  using strata::plan::automatic_bytes_per_pack;
  const std::size_t one = automatic_bytes_per_pack(1), many = automatic_bytes_per_pack(2);
  // Packing pays only for tensors small next to latency x bandwidth: tens of
  // KiB over shared memory, around a MiB over a network (docs/ALGORITHMS.md).
  CHECK(one >= 4 * 1024);
  CHECK(one <= 256 * 1024);
  CHECK(many > one);
  CHECK(many <= 16 * 1024 * 1024);
  CHECK(automatic_bytes_per_pack(64) == many);
}

TEST_CASE("validate_packing: negative values raise InvalidArgument naming the field and value") {
  using strata::plan::validate_packing;
  using strata::test::check_throws_naming;
  check_throws_naming<InvalidArgument>([] { validate_packing(num_packs(-1)); }, {"num_packs", "-1"});
  check_throws_naming<InvalidArgument>([] { validate_packing(num_packs(-7)); }, {"num_packs", "-7"});
  check_throws_naming<InvalidArgument>([] { validate_packing(aggregate(-5, 10)); },
                                       {"agg_small_grads_max_bytes", "-5"});
  check_throws_naming<InvalidArgument>([] { validate_packing(aggregate(100, -2)); },
                                       {"agg_small_grads_max_group", "-2"});
  CHECK_NOTHROW(validate_packing(PackingOptions{}));
  CHECK_NOTHROW(validate_packing(num_packs(0)));
  CHECK_NOTHROW(validate_packing(num_packs(1000)));
  CHECK_NOTHROW(validate_packing(aggregate(0, 0)));
  CHECK_NOTHROW(validate_packing(aggregate(1LL << 40, 1 << 20)));
}

TEST_CASE("describe names the packs") {
  const auto tensors = f32s({10, 10});
  const auto packs = make_packs(tensors, num_packs(2), 1);
  const std::string text = strata::plan::describe(packs);
  CHECK(text.find("2 pack") != std::string::npos);
  CHECK(text.find("f32") != std::string::npos);
}
