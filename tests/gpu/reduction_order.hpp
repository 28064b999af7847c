// Inexact test data whose reduced bits depend on the order of the
// reduction, and the host reference for it: the GPU tests' check that
// strata reduces in the order it promises.
//
// Small integers reduce to the same bits in every order, so they cannot
// show a reduction run in the wrong order; these floats can: mixed signs
// over many binades, where (a + b) + c and (c + b) + a differ in many
// elements. strata fixes the order where it reduces with its own kernel
// (docs/GPU.md): psgpu's owners and the nccl algorithm's NaN-keeping
// exchange (floating min/max) reduce in rank order, a rank's replicas are
// combined in replica order. Elsewhere the order is the algorithm's own
// (NCCL's sum and product, the host algorithms' rings and trees, shared-
// memory rounds that start from the owner's own input): the same bits on
// every rank, but not a fold in rank order.
//
// So the reference follows the plan's shape (a Fold): a rank's replicas,
// then the ranks of a node, then the nodes, each group folded left to right
// with strata's host kernel (f16/bf16 in f32, rounded once per step; mean:
// the sum divided once). Where every group of the shape is reduced in an
// order strata fixes, or has nothing to order (one operand, or two of a
// commutative sum or product), the result must equal that fold bit for bit;
// otherwise it must lie within the rounding that any order allows around
// the exact value (and the tests check the bits are the same on every rank).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "host/reduce_kernel.hpp"
#include "strata/strata.hpp"
#include "util/half.hpp"

namespace strata::gpu_test {

inline bool is_floating(DataType d) {
  return d == DataType::f32 || d == DataType::f64 || d == DataType::f16 || d == DataType::bf16;
}

inline std::uint64_t mix(std::uint64_t x) {  // splitmix64's finaliser
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

inline void store(std::byte* at, DataType dtype, double v) {
  switch (dtype) {
    case DataType::f64: std::memcpy(at, &v, 8); break;
    case DataType::f32: { const float f = float(v); std::memcpy(at, &f, 4); break; }
    case DataType::f16: { const auto h = util::f32_to_f16(float(v)); std::memcpy(at, &h, 2); break; }
    case DataType::bf16: { const auto h = util::f32_to_bf16(float(v)); std::memcpy(at, &h, 2); break; }
    default: break;
  }
}

inline long double load(const std::byte* at, DataType dtype) {
  switch (dtype) {
    case DataType::f64: { double d; std::memcpy(&d, at, 8); return d; }
    case DataType::f32: { float f; std::memcpy(&f, at, 4); return f; }
    case DataType::f16: { std::uint16_t h; std::memcpy(&h, at, 2); return util::f16_to_f32(h); }
    case DataType::bf16: { std::uint16_t h; std::memcpy(&h, at, 2); return util::bf16_to_f32(h); }
    default: return 0;
  }
}

// Significand bits after the point, and the exponent span of sums: the sum
// of 16 such values stays finite (f16: 16 x 2^9 < 65504).
inline int mantissa_bits(DataType d) {
  return d == DataType::f64 ? 52 : d == DataType::f32 ? 23 : d == DataType::f16 ? 10 : 7;
}
inline int exponent_span(DataType d) { return d == DataType::f64 ? 40 : d == DataType::f32 ? 16 : 8; }

// Element i of contribution `who` (any number naming a rank, a replica, a
// tensor) for `op` in floating `dtype`, the same on every rank:
//  - sum, mean: mixed signs, exponents over +-exponent_span binades, every
//    significand bit random (exactly representable in the dtype);
//  - prod: mixed signs, magnitudes in [0.75, 1.5): 16 factors stay normal;
//  - min, max: the sum's values, and in every seventh element a zero of
//    random sign in every contribution: which tied zero wins (strata's
//    kernels return the first operand on a tie) shows the order.
inline std::vector<std::byte> inexact_values(DataType dtype, std::size_t count, ReduceOp op, std::uint64_t who) {
  const std::size_t e = dtype_size(dtype);
  std::vector<std::byte> bytes(count * e);
  const int bits = mantissa_bits(dtype), span = exponent_span(dtype);
  for (std::size_t i = 0; i < count; ++i) {
    const std::uint64_t h = mix(mix(who * 0x100000001b3ull + std::uint64_t(dtype)) ^ i);
    const double sign = (h >> 63) ? -1.0 : 1.0;
    const double fraction = double((h >> 8) & ((1ull << bits) - 1)) / double(1ull << bits);
    double v;
    if (op == ReduceOp::prod) {
      v = sign * (0.75 + 0.75 * fraction);
    } else if ((op == ReduceOp::min || op == ReduceOp::max) && i % 7 == 0) {
      v = sign * 0.0;
    } else {
      const int exponent = int(mix(h) % std::uint64_t(2 * span + 1)) - span;
      v = sign * std::ldexp(1.0 + fraction, exponent);
    }
    store(bytes.data() + i * e, dtype, v);
  }
  return bytes;
}

// How a plan reduces: a leaf is contribution `leaf`; otherwise `parts` are
// reduced left to right, in an order strata fixes (`fixed`) or in the
// order of the algorithm that runs them.
struct Fold {
  int leaf = -1;
  std::vector<Fold> parts;
  bool fixed = true;
};

// Whether algorithm `name` (one level of a plan, "#M" dropped) reduces in
// an order strata fixes, rank order: psgpu always; nccl for floating
// min/max (the NaN-keeping exchange), never for its own sum and product.
inline bool in_rank_order(const std::string& name, ReduceOp op, DataType dtype) {
  return name == "psgpu" || (name == "nccl" && is_floating(dtype) && (op == ReduceOp::min || op == ReduceOp::max));
}

// The levels of a plan as Communicator::algorithm_for prints it ("xring",
// "psgpu#2", "nccl/pscpu"), without their "#M".
inline std::vector<std::string> plan_levels(const std::string& algorithm) {
  std::vector<std::string> levels;
  std::size_t from = 0;
  for (;;) {
    const std::size_t slash = algorithm.find('/', from);
    const std::string level = algorithm.substr(from, slash == std::string::npos ? slash : slash - from);
    levels.push_back(level.substr(0, level.find('#')));
    if (slash == std::string::npos) return levels;
    from = slash + 1;
  }
}

// The fold a plan runs over every rank of `topology`, rank r's own part
// being rank_part(r): an all-reduce on several nodes reduces inside each
// node with the first level, then across nodes in node order with the
// second (docs/GPU.md, "Which algorithm"); anything else runs the first
// level flat over every rank.
inline Fold plan_fold(const std::string& algorithm, const Topology& topology, Collective collective, ReduceOp op,
                      DataType dtype, const std::function<Fold(int)>& rank_part) {
  const std::vector<std::string> levels = plan_levels(algorithm);
  const auto ranks = [&](const std::vector<int>& members, const std::string& by) {
    Fold f{-1, {}, in_rank_order(by, op, dtype)};
    for (int r : members) f.parts.push_back(rank_part(r));
    return f;
  };
  if (collective == Collective::all_reduce && levels.size() > 1 && topology.nodes.size() > 1) {
    Fold across{-1, {}, in_rank_order(levels[1], op, dtype)};
    for (const NodeInfo& node : topology.nodes) across.parts.push_back(ranks(node.ranks, levels[0]));
    return across;
  }
  std::vector<int> all(topology.ranks.size());
  for (std::size_t r = 0; r < all.size(); ++r) all[r] = int(r);
  return ranks(all, levels[0]);
}

// Whether every group of `fold` gives the same bits as its left-to-right
// fold: its order is fixed, or there is nothing to order.
inline bool exact(const Fold& fold, ReduceOp op) {
  const bool commutative = op == ReduceOp::sum || op == ReduceOp::prod || op == ReduceOp::mean;
  if (!fold.fixed && (fold.parts.size() > 2 || (fold.parts.size() == 2 && !commutative))) return false;
  for (const Fold& part : fold.parts)
    if (!exact(part, op)) return false;
  return true;
}

// The fold's result over elements [first, first + count) of the
// contributions (indexed by leaf), with strata's host kernel.
inline std::vector<std::byte> evaluate(const Fold& fold, const std::vector<std::vector<std::byte>>& contributions,
                                       std::size_t first, std::size_t count, DataType dtype, ReduceOp op) {
  const std::size_t e = dtype_size(dtype);
  if (fold.leaf >= 0) {
    const auto& c = contributions[std::size_t(fold.leaf)];
    return {c.begin() + std::ptrdiff_t(first * e), c.begin() + std::ptrdiff_t((first + count) * e)};
  }
  std::vector<std::byte> acc = evaluate(fold.parts[0], contributions, first, count, dtype, op);
  for (std::size_t p = 1; p < fold.parts.size(); ++p)
    host::reduce_into(acc.data(), acc.data(), evaluate(fold.parts[p], contributions, first, count, dtype, op).data(),
                      count, dtype, op == ReduceOp::mean ? ReduceOp::sum : op);
  return acc;
}

// What the fold's expected result depends on: its shape where exact(),
// nothing else otherwise (every order then has the same bound). Equal
// signatures over the same contributions expect the same.
inline std::string signature(const Fold& fold, ReduceOp op) {
  if (!exact(fold, op)) return "any order";
  if (fold.leaf >= 0) return std::to_string(fold.leaf);
  std::string s = "(";
  for (const Fold& part : fold.parts) s += signature(part, op) + " ";
  return s + ")";
}

// What a plan's result must be over elements [first, first + count): bit
// for bit its fold where exact(), else within the rounding of any order of
// the exact result (as a number: min/max may return either tied zero).
struct Expected {
  DataType dtype = DataType::f32;
  std::size_t first = 0;
  bool bitwise = true;
  std::vector<std::byte> bits;          // bitwise
  std::vector<long double> value, bound;  // otherwise

  // "" when `got` (those elements) is as expected; else what differs, at
  // the first element that does.
  std::string compare(const std::vector<std::byte>& got) const {
    const std::size_t e = dtype_size(dtype);
    const std::size_t count = bitwise ? bits.size() / e : value.size();
    for (std::size_t i = 0; i < count; ++i) {
      const long double have = load(&got[i * e], dtype);
      if (bitwise ? std::memcmp(&got[i * e], &bits[i * e], e) == 0 : std::fabs(have - value[i]) <= bound[i]) continue;
      return "element " + std::to_string(first + i) + " is " + std::to_string(double(have)) +
             (bitwise ? ", not " + std::to_string(double(load(&bits[i * e], dtype))) +
                            " (bit for bit, the order strata fixes)"
                      : ", not within " + std::to_string(double(bound[i])) + " of the exact " +
                            std::to_string(double(value[i])));
    }
    return "";
  }
};

// The result of `fold` over `contributions` (indexed by leaf) at elements
// [first, first + count), op `op`, mean dividing by `divisor`.
inline Expected expect(const Fold& fold, const std::vector<std::vector<std::byte>>& contributions, std::size_t first,
                       std::size_t count, DataType dtype, ReduceOp op, std::size_t divisor) {
  Expected x{dtype, first, exact(fold, op), {}, {}, {}};
  if (x.bitwise) {
    x.bits = evaluate(fold, contributions, first, count, dtype, op);
    if (op == ReduceOp::mean) host::divide_by(x.bits.data(), count, dtype, divisor);
    return x;
  }
  // Recursive summation in any order errs by at most (n - 1) u sum |c|,
  // a product by about (n - 1) u |product|; a mean divides once more.
  const std::size_t e = dtype_size(dtype);
  const long double u = std::ldexp(1.0L, -(mantissa_bits(dtype) + 1));
  const long double tiny = std::ldexp(1.0L, dtype == DataType::f64 ? -1074 : dtype == DataType::f32 ? -149 : -24);
  const long double n = (long double)contributions.size();
  x.value.resize(count);
  x.bound.resize(count);
  for (std::size_t i = 0; i < count; ++i) {
    long double value = op == ReduceOp::prod ? 1 : 0, magnitude = 0;
    for (std::size_t c = 0; c < contributions.size(); ++c) {
      const long double v = load(&contributions[c][(first + i) * e], dtype);
      if (op == ReduceOp::min || op == ReduceOp::max)
        value = c == 0 ? v : op == ReduceOp::min ? std::fmin(value, v) : std::fmax(value, v);
      else if (op == ReduceOp::prod) value *= v;
      else value += v, magnitude += std::fabs(v);
    }
    long double bound = 0;
    if (op == ReduceOp::sum) bound = n * u * magnitude + n * tiny;
    if (op == ReduceOp::mean) value /= (long double)divisor, bound = u * magnitude + 2 * u * std::fabs(value) + n * tiny;
    if (op == ReduceOp::prod) bound = 2 * n * u * std::fabs(value) + tiny;
    x.value[i] = value;
    x.bound[i] = bound;
  }
  return x;
}

}  // namespace strata::gpu_test
