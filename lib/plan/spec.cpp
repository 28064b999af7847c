#include "plan/spec.hpp"

#include <fmt/format.h>

#include <cctype>
#include <charconv>

#include "strata/errors.hpp"
#include "util/where.hpp"

namespace strata::plan {

namespace {

// More shards than this only adds per-shard overhead (every shard is a
// separate pipeline, tag or owner); the bound also keeps tags and scratch
// slots of sharded algorithms in range.
constexpr int kMaxShards = 64;

[[noreturn]] void fail(std::string_view spec, const std::string& why) {
  throw InvalidArgument(util::located(fmt::format("all_reduce_spec '{}': {}", spec, why)));
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

long long parse_limit(std::string_view spec, std::string_view text) {
  text = trim(text);
  long long multiplier = 1;
  if (!text.empty()) {
    switch (text.back()) {
      case 'k': case 'K': multiplier = 1LL << 10; break;
      case 'm': case 'M': multiplier = 1LL << 20; break;
      case 'g': case 'G': multiplier = 1LL << 30; break;
      default: break;
    }
    if (multiplier != 1) text.remove_suffix(1);
  }
  long long value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || value < 0)
    fail(spec, fmt::format("limit '{}' is not a non-negative byte count (suffixes k, M, G)", text));
  if (value > (1LL << 62) / multiplier) fail(spec, fmt::format("limit '{}' is too large", text));
  return value * multiplier;
}

SpecEntry parse_entry(std::string_view spec, std::string_view text) {
  text = trim(text);
  SpecEntry entry;
  const auto hash = text.find('#');
  std::string_view name = trim(text.substr(0, hash));
  if (hash != std::string_view::npos) {
    std::string_view shards = trim(text.substr(hash + 1));
    int value = 0;
    auto [end, ec] = std::from_chars(shards.data(), shards.data() + shards.size(), value);
    if (shards.empty() || ec != std::errc() || end != shards.data() + shards.size())
      fail(spec, fmt::format("shards '{}' in '{}' is not an integer", shards, text));
    entry.shards = value;
  }
  entry.algorithm = std::string(name);
  return entry;
}

std::string format_limit(long long limit) {
  if (limit > 0 && limit % (1LL << 30) == 0) return fmt::format("{}G", limit >> 30);
  if (limit > 0 && limit % (1LL << 20) == 0) return fmt::format("{}M", limit >> 20);
  if (limit > 0 && limit % (1LL << 10) == 0) return fmt::format("{}k", limit >> 10);
  return fmt::format("{}", limit);
}

void validate(std::string_view spec, const std::vector<SpecEntry>& entries, Catalogue known) {
  if (entries.empty()) fail(spec, "the spec is empty");
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const SpecEntry& e = entries[i];
    if (e.algorithm.empty()) fail(spec, fmt::format("entry {} has no algorithm name", i + 1));
    const auto slash = e.algorithm.find('/');
    if (slash != std::string::npos && e.algorithm.find('/', slash + 1) != std::string::npos)
      fail(spec, fmt::format("'{}' has more than two levels (at most 'intra/cross')", e.algorithm));
    std::string_view whole = e.algorithm;
    for (std::string_view level : {whole.substr(0, slash), slash == std::string::npos ? "" : whole.substr(slash + 1)}) {
      if (slash != std::string::npos && level.empty())
        fail(spec, fmt::format("'{}' has an empty level", e.algorithm));
      if (!level.empty() && !find(known, level))
        fail(spec, fmt::format("unknown algorithm '{}' (see docs/ALGORITHMS.md for the names)", level));
    }
    if (e.shards < 1 || e.shards > kMaxShards)
      fail(spec, fmt::format("shards {} for '{}' must be in [1, {}]", e.shards, e.algorithm, kMaxShards));
    const bool last = i + 1 == entries.size();
    if (last && e.limit != -1)
      fail(spec, fmt::format("the last limit must be -1 (no bound), not {}", e.limit));
    if (!last && e.limit < 0) fail(spec, fmt::format("limit {} of entry {} must be >= 0", e.limit, i + 1));
    if (!last && i > 0 && e.limit <= entries[i - 1].limit)
      fail(spec, fmt::format("limits must increase strictly: {} after {}", e.limit, entries[i - 1].limit));
  }
}

}  // namespace

std::string Spec::to_string() const {
  if (entries.empty()) return "auto";
  std::string text;
  for (const SpecEntry& e : entries) {
    text += e.algorithm;
    if (e.shards != 1) text += fmt::format("#{}", e.shards);
    if (e.limit != -1) text += fmt::format(":{}:", format_limit(e.limit));
  }
  return text;
}

const SpecEntry& Spec::select(std::size_t bytes) const {
  for (const SpecEntry& e : entries)
    if (e.limit < 0 || static_cast<unsigned long long>(e.limit) >= bytes) return e;
  return entries.back();
}

Spec parse_spec(std::string_view text, Catalogue known) {
  const std::string_view body = trim(text);
  if (body == "auto") return Spec{};
  if (body.empty()) fail(text, "the spec is empty");
  // Tokens alternate: entry, limit, entry, limit, ..., entry.
  std::vector<SpecEntry> entries;
  std::size_t pos = 0;
  for (std::size_t token = 0;; ++token) {
    const auto colon = body.find(':', pos);
    const std::string_view piece = body.substr(pos, colon == std::string_view::npos ? colon : colon - pos);
    if (trim(piece).empty())
      fail(text, fmt::format("malformed: expected {} at character {}", token % 2 ? "a limit" : "an algorithm", pos + 1));
    if (token % 2 == 0) {
      entries.push_back(parse_entry(text, piece));
    } else {
      entries.back().limit = parse_limit(text, piece);
    }
    if (colon == std::string_view::npos) {
      if (token % 2 == 1) fail(text, "malformed: a limit must be followed by ':' and an algorithm");
      break;
    }
    pos = colon + 1;
  }
  validate(text, entries, known);
  return Spec{std::move(entries)};
}

Spec make_spec(std::vector<SpecEntry> entries, Catalogue known) {
  Spec spec{std::move(entries)};
  validate(spec.entries.empty() ? std::string("(empty)") : spec.to_string(), spec.entries, known);
  return spec;
}

}  // namespace strata::plan
