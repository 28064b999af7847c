// plan/spec.hpp: the all_reduce_spec grammar (parse, to_string round trip,
// errors naming the offending part) and size-based selection.
//
// The grammar tests use a made-up catalogue of the documented algorithm
// names, so they test the parser independently of which algorithms are
// registered today; a separate test checks the parser with the real
// registry (exec::catalogue) for every name that is registered.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "check_throws.hpp"
#include "exec/registry.hpp"
#include "plan/choose.hpp"
#include "plan/spec.hpp"
#include "strata/errors.hpp"

using namespace strata::plan;
using strata::InvalidArgument;
using strata::test::check_throws_naming;

namespace {

// The documented algorithm names, as a made-up catalogue of the plan layer's own.
constexpr std::array<std::string_view, 7> kDocumented = {"xring", "rechd", "pscpu", "psgpu", "tree", "mpi", "nccl"};
const std::array<Algorithm, 7> kDocumentedInfos = [] {
  std::array<Algorithm, 7> infos{};
  for (std::size_t i = 0; i < infos.size(); ++i) infos[i].name = kDocumented[i];
  return infos;
}();
const std::array<const Algorithm*, 7> kDocumentedCatalogue = [] {
  std::array<const Algorithm*, 7> pointers{};
  for (std::size_t i = 0; i < pointers.size(); ++i) pointers[i] = &kDocumentedInfos[i];
  return pointers;
}();
const Catalogue documented = kDocumentedCatalogue;

std::vector<SpecEntry> entries_of(std::string_view text) { return parse_spec(text, documented).entries; }

void check_round_trip(std::string_view text, Catalogue known) {
  CAPTURE(text);
  const Spec spec = parse_spec(text, known);
  const std::string printed = spec.to_string();
  CAPTURE(printed);
  const Spec again = parse_spec(printed, known);
  CHECK(again.entries == spec.entries);
  CHECK(again.is_auto() == spec.is_auto());
}

const std::vector<std::pair<std::string, std::vector<SpecEntry>>>& required_specs() {
  static const std::vector<std::pair<std::string, std::vector<SpecEntry>>> specs = {
      {"xring", {{"xring", 1, -1}}},
      {"xring#2", {{"xring", 2, -1}}},
      {"pscpu:32k:xring", {{"pscpu", 1, 32768}, {"xring", 1, -1}}},
      {"nccl/xring#2:64k:pscpu/pscpu#2", {{"nccl/xring", 2, 65536}, {"pscpu/pscpu", 2, -1}}},
      {"tree:4k:rechd:16M:xring#2", {{"tree", 1, 4096}, {"rechd", 1, 16 << 20}, {"xring", 2, -1}}},
  };
  return specs;
}

}  // namespace

TEST_CASE("parse_spec: the documented forms") {
  for (const auto& [text, want] : required_specs()) {
    CAPTURE(text);
    CHECK(entries_of(text) == want);
    check_round_trip(text, documented);
  }
  CHECK(parse_spec("auto", documented).is_auto());
  CHECK(parse_spec("auto", documented).to_string() == "auto");
  check_round_trip("auto", documented);
}

TEST_CASE("parse_spec: limits are bytes with k/K, m/M, g/G as powers of 1024") {
  CHECK(entries_of("tree:100:xring") == std::vector<SpecEntry>{{"tree", 1, 100}, {"xring", 1, -1}});
  CHECK(entries_of("tree:0:xring")[0].limit == 0);
  CHECK(entries_of("tree:1K:rechd:2m:mpi:3g:xring") ==
        std::vector<SpecEntry>{{"tree", 1, 1024}, {"rechd", 1, 2LL << 20}, {"mpi", 1, 3LL << 30}, {"xring", 1, -1}});
  CHECK(entries_of("xring#1") == std::vector<SpecEntry>{{"xring", 1, -1}});
  for (const char* text : {"tree:100:xring", "tree:1K:rechd:2m:mpi:3g:xring", "tree:1000000:xring#3",
                           "mpi:1:tree:2:rechd#4:3:xring#5", "xring#1"})
    check_round_trip(text, documented);
  // to_string uses the shortest suffix form for whole multiples.
  CHECK(parse_spec("pscpu:32768:xring", documented).to_string() == "pscpu:32k:xring");
  CHECK(parse_spec("tree:4k:rechd:16M:xring#2", documented).to_string() == "tree:4k:rechd:16M:xring#2");
}

TEST_CASE("make_spec: the tuple form") {
  const Spec spec = make_spec({{"pscpu", 1, 32768}, {"xring", 1, -1}}, documented);
  CHECK(spec.to_string() == "pscpu:32k:xring");
  CHECK(make_spec({{"pscpu/pscpu", 2, -1}}, documented).to_string() == "pscpu/pscpu#2");
}

TEST_CASE("parse_spec errors: unknown algorithm, naming it") {
  check_throws_naming<InvalidArgument>([] { parse_spec("bogus", documented); }, {"unknown algorithm", "'bogus'"});
  check_throws_naming<InvalidArgument>([] { parse_spec("tree:4k:ringx#2", documented); }, {"'ringx'"});
  check_throws_naming<InvalidArgument>([] { parse_spec("nccl/bogus", documented); }, {"'bogus'"});
  check_throws_naming<InvalidArgument>([] { parse_spec("Xring", documented); }, {"'Xring'"});
  check_throws_naming<InvalidArgument>([] { make_spec({{"bogus", 1, -1}}, documented); }, {"'bogus'"});
}

TEST_CASE("parse_spec errors: shards < 1 or not an integer") {
  check_throws_naming<InvalidArgument>([] { parse_spec("xring#0", documented); }, {"shards", "0"});
  check_throws_naming<InvalidArgument>([] { parse_spec("xring#-2", documented); }, {"shards", "-2"});
  check_throws_naming<InvalidArgument>([] { parse_spec("xring#two", documented); }, {"shards", "'two'"});
  check_throws_naming<InvalidArgument>([] { parse_spec("xring#1.5", documented); }, {"shards", "'1.5'"});
  check_throws_naming<InvalidArgument>([] { parse_spec("xring#", documented); }, {"shards"});
  check_throws_naming<InvalidArgument>([] { parse_spec("tree:4k:xring#99999999999", documented); },
                                       {"shards", "99999999999"});
  check_throws_naming<InvalidArgument>([] { make_spec({{"xring", 0, -1}}, documented); }, {"shards", "0"});
  // More shards than any algorithm can use (and than its tags and scratch
  // slots allow) are refused with the bound.
  check_throws_naming<InvalidArgument>([] { parse_spec("xring#1100", documented); }, {"shards", "1100", "64"});
  CHECK(parse_spec("xring#64", documented).entries.front().shards == 64);
}

TEST_CASE("parse_spec errors: limits must increase strictly and the last must be -1") {
  check_throws_naming<InvalidArgument>([] { parse_spec("tree:4k:rechd:4k:xring", documented); },
                                       {"increase", "4096"});
  check_throws_naming<InvalidArgument>([] { parse_spec("tree:8k:rechd:4k:xring", documented); },
                                       {"increase", "4096", "8192"});
  check_throws_naming<InvalidArgument>([] { make_spec({{"tree", 1, 4096}}, documented); }, {"last limit", "4096"});
  check_throws_naming<InvalidArgument>([] { make_spec({{"tree", 1, 4096}, {"xring", 1, 8192}}, documented); },
                                       {"last limit", "8192"});
  check_throws_naming<InvalidArgument>([] { make_spec({{"tree", 1, -1}, {"xring", 1, -1}}, documented); },
                                       {"-1"});
  check_throws_naming<InvalidArgument>([] { make_spec({{"tree", 1, 4096}, {"rechd", 1, 100}, {"xring", 1, -1}}, documented); },
                                       {"increase", "100"});
}

TEST_CASE("parse_spec errors: empty and malformed text, naming the problem") {
  check_throws_naming<InvalidArgument>([] { parse_spec("", documented); }, {"empty"});
  check_throws_naming<InvalidArgument>([] { parse_spec("   ", documented); }, {"empty"});
  check_throws_naming<InvalidArgument>([] { make_spec({}, documented); }, {"empty"});
  check_throws_naming<InvalidArgument>([] { parse_spec("tree:", documented); }, {"'tree:'"});
  check_throws_naming<InvalidArgument>([] { parse_spec(":xring", documented); }, {"':xring'"});
  check_throws_naming<InvalidArgument>([] { parse_spec("tree::xring", documented); }, {"limit"});
  check_throws_naming<InvalidArgument>([] { parse_spec("tree:4k", documented); }, {"'tree:4k'"});
  check_throws_naming<InvalidArgument>([] { parse_spec("tree:abc:xring", documented); }, {"limit", "'abc'"});
  check_throws_naming<InvalidArgument>([] { parse_spec("tree:4x:xring", documented); }, {"limit", "'4x'"});
  check_throws_naming<InvalidArgument>([] { parse_spec("tree:-5:xring", documented); }, {"limit", "'-5'"});
  check_throws_naming<InvalidArgument>([] { parse_spec("tree:99999999999G:xring", documented); }, {"limit"});
  check_throws_naming<InvalidArgument>([] { parse_spec("#2", documented); }, {"no algorithm"});
}

TEST_CASE("parse_spec errors: at most two hierarchy levels, none empty") {
  check_throws_naming<InvalidArgument>([] { parse_spec("nccl/xring/pscpu", documented); },
                                       {"'nccl/xring/pscpu'", "more than two levels"});
  check_throws_naming<InvalidArgument>([] { parse_spec("nccl/", documented); }, {"'nccl/'", "empty level"});
  check_throws_naming<InvalidArgument>([] { parse_spec("/xring", documented); }, {"'/xring'", "empty level"});
}

TEST_CASE("Spec::select: the first entry whose limit >= bytes (limits inclusive)") {
  const Spec spec = parse_spec("tree:4k:rechd:16M:xring#2", documented);
  auto pick = [&](std::size_t bytes) {
    const SpecEntry& e = spec.select(bytes);
    return e.algorithm + (e.shards > 1 ? "#" + std::to_string(e.shards) : "");
  };
  CHECK(pick(0) == "tree");
  CHECK(pick(4095) == "tree");
  CHECK(pick(4096) == "tree");
  CHECK(pick(4097) == "rechd");
  CHECK(pick((16 << 20) - 1) == "rechd");
  CHECK(pick(16 << 20) == "rechd");
  CHECK(pick((16 << 20) + 1) == "xring#2");
  CHECK(pick(SIZE_MAX) == "xring#2");
  const Spec zero = parse_spec("tree:0:mpi", documented);
  CHECK(zero.select(0).algorithm == "tree");
  CHECK(zero.select(1).algorithm == "mpi");
  CHECK(parse_spec("mpi", documented).select(SIZE_MAX).algorithm == "mpi");
}

TEST_CASE("the registry: every name documented, found by name, and the parser accepts registered names") {
  const Catalogue registry = strata::exec::catalogue();
  for (const Algorithm* algorithm : registry) {
    CAPTURE(algorithm->name);
    CHECK(find(registry, algorithm->name) == algorithm);
  }
  CHECK(find(registry, "tree"));
  CHECK(find(registry, "mpi"));
  CHECK(find(registry, "nccl"));  // GPU names are valid in specs everywhere
  CHECK(find(registry, "psgpu"));
  CHECK_FALSE(find(registry, "bogus"));
  CHECK_FALSE(find(registry, ""));
  CHECK_FALSE(find(registry, "nccl/xring"));  // one level at a time
  // The required strings, with the real registry, once their names exist.
  for (const auto& [text, want] : required_specs()) {
    bool all_known = true;
    for (const SpecEntry& e : want)
      for (std::string_view level : {std::string_view(e.algorithm).substr(0, e.algorithm.find('/')),
                                     e.algorithm.find('/') == std::string::npos
                                         ? std::string_view()
                                         : std::string_view(e.algorithm).substr(e.algorithm.find('/') + 1)})
        if (!level.empty() && !find(registry, level)) all_known = false;
    CAPTURE(text);
    if (all_known) {
      CHECK(parse_spec(text, registry).entries == want);
      check_round_trip(text, registry);
    } else {
      CHECK_THROWS_AS(parse_spec(text, registry), InvalidArgument);
    }
  }
  CHECK(resolve_spec("tree:4k:mpi", registry).to_string() == "tree:4k:mpi");
  CHECK_THROWS_AS(resolve_spec("bogus", registry), InvalidArgument);
}

TEST_CASE("the default tables name registered algorithms that serve their collective") {
  const Catalogue registry = strata::exec::catalogue();
  for (const strata::Collective collective :
       {strata::Collective::all_reduce, strata::Collective::reduce, strata::Collective::broadcast})
    for (const strata::Memory memory : {strata::Memory::host, strata::Memory::cuda})
      for (const int nodes : {1, 2}) {
        const Spec& table = default_spec(collective, memory, nodes);
        CHECK_NOTHROW(make_spec(table.entries, registry));
      }
}

TEST_CASE("the registry's descriptors agree with their backend entry points") {
  for (const strata::exec::Entry& entry : strata::exec::registry()) {
    CAPTURE(entry.info->name);
    CHECK((entry.host != nullptr) != (entry.gpu != nullptr));
    CHECK(entry.info->memory == (entry.host ? strata::Memory::host : strata::Memory::cuda));
    if (entry.gpu) CHECK(bool(entry.gpu->make_level));  // its executor comes from the registry
    if (entry.host) {
      CHECK(bool(entry.host->all_reduce));
      CHECK(entry.info->reduce == bool(entry.host->reduce));
      CHECK(entry.info->broadcast == bool(entry.host->broadcast));
    }
  }
}
