// plan/select: the size -> algorithm map as the selector applies it
// (plan::choose and describe_map at limit-1, limit, limit+1; the grammar and
// Spec::select themselves are tests/unit/test_spec.cpp's), and where a
// communicator's spec comes from: Config, STRATA_SPEC, STRATA_SPEC_FILE.
#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "check_throws.hpp"
#include "exec/registry.hpp"
#include "plan/choose.hpp"
#include "plan/spec.hpp"
#include "strata/errors.hpp"

using namespace strata::plan;
using strata::Implementation;
using strata::InvalidArgument;
using strata::test::check_throws_naming;

namespace {

bool registered(std::initializer_list<const char*> names) {
  for (const char* name : names)
    if (!find(strata::exec::catalogue(), name)) return false;
  return true;
}

// The communicator's spec from `configured` and the environment, checked
// against the real registry.
Spec resolved(std::string_view configured) { return resolve_spec(configured, strata::exec::catalogue()); }

// plan::choose for host memory on one node of one rank.
Choice chosen(const Spec& spec, Collective collective, std::size_t bytes, Implementation implementation) {
  return choose(strata::exec::catalogue(), spec, collective, bytes, implementation, strata::Memory::host, {.node_count = 1, .local_size = 1});
}

std::string picked(const Spec& spec, std::size_t bytes, Collective collective = Collective::all_reduce) {
  return chosen(spec, collective, bytes, Implementation::automatic).describe();
}

// Sets (or unsets, for nullptr) an environment variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) had_ = true, old_ = old;
    if (value) setenv(name, value, 1);
    else unsetenv(name);
  }
  ~ScopedEnv() {
    if (had_) setenv(name_.c_str(), old_.c_str(), 1);
    else unsetenv(name_.c_str());
  }

 private:
  std::string name_, old_;
  bool had_ = false;
};

// A temporary file with `text`, removed at scope end.
class TempFile {
 public:
  explicit TempFile(const std::string& text) {
    char name[] = "/tmp/strata-spec-XXXXXX";
    const int fd = mkstemp(name);
    REQUIRE(fd >= 0);
    close(fd);
    path_ = name;
    std::ofstream(path_) << text;
  }
  ~TempFile() { std::remove(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace

TEST_CASE("choose: sizes limit-1, limit, limit+1 of 'tree:4k:rechd:16M:xring#2'") {
  if (!registered({"tree", "rechd", "xring"})) {
    MESSAGE("rechd or xring not registered yet: skipped");
    return;
  }
  const Spec spec = resolved("tree:4k:rechd:16M:xring#2");
  const std::size_t k4 = 4096, m16 = std::size_t{16} << 20;
  CHECK(picked(spec, 1) == "tree");
  CHECK(picked(spec, k4 - 1) == "tree");
  CHECK(picked(spec, k4) == "tree");
  CHECK(picked(spec, k4 + 1) == "rechd");
  CHECK(picked(spec, m16 - 1) == "rechd");
  CHECK(picked(spec, m16) == "rechd");
  CHECK(picked(spec, m16 + 1) == "xring#2");
  CHECK(picked(spec, std::size_t{1} << 40) == "xring#2");
  // ring forces xring whatever the spec says; nccl on host memory is refused with the reason.
  CHECK(chosen(spec, Collective::all_reduce, 10, Implementation::ring).describe() == "xring");
  check_throws_naming<InvalidArgument>([&] { chosen(spec, Collective::all_reduce, 10, Implementation::nccl); },
                                       {"nccl", "host memory"});
}

TEST_CASE("choose: hierarchical names give both levels, for rooted calls on host memory too") {
  if (!registered({"pscpu", "xring"})) {
    MESSAGE("pscpu or xring not registered yet: skipped");
    return;
  }
  const Spec spec = resolved("pscpu/xring#2:64k:xring");
  CHECK(picked(spec, 65535) == "pscpu/xring#2");
  CHECK(picked(spec, 65536) == "pscpu/xring#2");
  CHECK(picked(spec, 65537) == "xring");
  // Host memory: reduce and broadcast run hierarchically too (shared memory
  // inside the node, the cross level on each owner's slice).
  const Choice rooted = chosen(spec, Collective::reduce, 100, Implementation::automatic);
  REQUIRE(rooted.cross != nullptr);
  CHECK(rooted.describe() == "pscpu/xring#2");
  // GPU algorithms on host memory fall back to the default table.
  const Choice fallback = chosen(resolved("nccl"), Collective::all_reduce, 100, Implementation::automatic);
  REQUIRE(fallback.algorithm != nullptr);
  CHECK(fallback.describe() == picked(Spec{}, 100));
}

TEST_CASE("describe_map: inclusive ranges that start at limit+1") {
  const Spec spec = resolved("tree:4k:mpi:16M:tree#2");
  const std::string map = describe_map(spec, 1);
  CAPTURE(map);
  CHECK(map.find("[0 .. 4096 B: tree]") != std::string::npos);
  CHECK(map.find("[4097 .. 16777216 B: mpi]") != std::string::npos);
  CHECK(map.find("[16777217 B and up: tree#2]") != std::string::npos);
  // auto prints the table it stands for.
  const std::string automatic = describe_map(Spec{}, 1);
  CAPTURE(automatic);
  CHECK(automatic.rfind("auto =", 0) == 0);
  CHECK(automatic.find("B and up") != std::string::npos);
}

TEST_CASE("resolve_spec: Config wins over STRATA_SPEC, which wins over STRATA_SPEC_FILE; else auto") {
  const TempFile file("mpi\n");
  {
    ScopedEnv spec("STRATA_SPEC", nullptr), path("STRATA_SPEC_FILE", nullptr);
    CHECK(resolved("").is_auto());
  }
  {
    ScopedEnv spec("STRATA_SPEC", "tree:4k:mpi"), path("STRATA_SPEC_FILE", file.path().c_str());
    CHECK(resolved("").to_string() == "tree:4k:mpi");
    CHECK(resolved("tree").to_string() == "tree");
  }
  {
    ScopedEnv spec("STRATA_SPEC", ""), path("STRATA_SPEC_FILE", file.path().c_str());  // empty = unset
    CHECK(resolved("").to_string() == "mpi");
    CHECK(resolved("tree").to_string() == "tree");
  }
  {
    ScopedEnv spec("STRATA_SPEC", "bogus"), path("STRATA_SPEC_FILE", nullptr);
    check_throws_naming<InvalidArgument>([] { resolved(""); }, {"bogus"});
  }
}

TEST_CASE("STRATA_SPEC_FILE: comments, blank lines and indentation around one spec") {
  ScopedEnv spec("STRATA_SPEC", nullptr);
  const TempFile file(
      "# tuned on 2 nodes x 8 ranks, 2024-06-01\n"
      "\n"
      "   # sizes in bytes\n"
      "  tree:4k:mpi:16M:tree#2   \r\n"
      "\t\n"
      "# end\n");
  ScopedEnv path("STRATA_SPEC_FILE", file.path().c_str());
  const Spec from_file = resolved("");
  CHECK(from_file.to_string() == "tree:4k:mpi:16M:tree#2");
  REQUIRE(from_file.entries.size() == 3);
  CHECK(from_file.select(4096).algorithm == "tree");
  CHECK(from_file.select(4097).algorithm == "mpi");
  CHECK(from_file.select((std::size_t{16} << 20) + 1).shards == 2);
  const TempFile automatic("# let the selector choose\nauto\n");
  ScopedEnv again("STRATA_SPEC_FILE", automatic.path().c_str());
  CHECK(resolved("").is_auto());
}

TEST_CASE("STRATA_SPEC_FILE: unreadable file or invalid spec -> InvalidArgument naming the file") {
  ScopedEnv spec("STRATA_SPEC", nullptr);
  SUBCASE("missing file") {
    const std::string missing = "/tmp/strata-no-such-dir/spec.txt";
    ScopedEnv path("STRATA_SPEC_FILE", missing.c_str());
    check_throws_naming<InvalidArgument>([] { resolved(""); }, {"STRATA_SPEC_FILE", missing});
  }
  SUBCASE("a directory") {
    ScopedEnv path("STRATA_SPEC_FILE", "/tmp");
    check_throws_naming<InvalidArgument>([] { resolved(""); }, {"STRATA_SPEC_FILE", "/tmp"});
  }
  SUBCASE("unknown algorithm") {
    const TempFile file("# comment\ntree:4k:bogus\n");
    ScopedEnv path("STRATA_SPEC_FILE", file.path().c_str());
    check_throws_naming<InvalidArgument>([] { resolved(""); }, {"STRATA_SPEC_FILE", file.path(), "bogus"});
  }
  SUBCASE("limits out of order") {
    const TempFile file("tree:16M:mpi:4k:tree\n");
    ScopedEnv path("STRATA_SPEC_FILE", file.path().c_str());
    check_throws_naming<InvalidArgument>([] { resolved(""); }, {file.path(), "increase"});
  }
  SUBCASE("only comments") {
    const TempFile file("# nothing here\n\n");
    ScopedEnv path("STRATA_SPEC_FILE", file.path().c_str());
    check_throws_naming<InvalidArgument>([] { resolved(""); }, {file.path(), "empty"});
  }
  SUBCASE("a configured spec does not read the file") {
    ScopedEnv path("STRATA_SPEC_FILE", "/tmp/strata-no-such-dir/spec.txt");
    CHECK(resolved("mpi").to_string() == "mpi");
  }
}
