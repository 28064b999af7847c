// The flight recorder in one process: STRATA_FLIGHT_RECORDS refused when
// it is not a number of records; the ring keeps exactly the last N calls,
// oldest first in the file; a call's states and plan; each thread's calls
// in a ring of its own, merged by time in the file, and an ended thread's
// ring taken over by the next; the file written by
// a fatal signal, after which the signal goes on to the handler installed
// before (or kills the process as it would have). Cases run in file order:
// the ring is made once per process, by the first valid start().
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "strata/errors.hpp"
#include "util/flight_file.hpp"
#include "util/flight_recorder.hpp"
#include "util/flight_signals.hpp"

namespace flight = strata::util::flight;

namespace {

constexpr std::size_t kRecords = 5;

std::string folder() {
  static const std::string path = [] {
    char name[] = "/tmp/strata-flight-unit-XXXXXX";
    return std::string(mkdtemp(name));
  }();
  return path;
}

std::vector<std::string> call_lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);)
    if (line.rfind("call ", 0) == 0) lines.push_back(line);
  return lines;
}

std::string text_of(const std::string& path) {
  std::ifstream in(path);
  std::stringstream all;
  all << in.rdbuf();
  return all.str();
}

flight::CallFacts facts(std::uint64_t sequence) {
  return {.comm = 7, .rank = 1, .size = 3, .sequence = sequence, .count = 100 + sequence, .dtype = 0, .op = 0};
}

}  // namespace

TEST_CASE("STRATA_FLIGHT_RECORDS that is not a number of records is refused, naming the variable") {
  for (const char* bad : {"0", "-1", "abc", "12x", "1e3", "99999999999"}) {
    setenv("STRATA_FLIGHT_RECORDS", bad, 1);
    try {
      flight::start();
      FAIL("accepted STRATA_FLIGHT_RECORDS=" << bad);
    } catch (const strata::InvalidArgument& e) {
      CHECK_MESSAGE(std::string(e.what()).find("STRATA_FLIGHT_RECORDS") != std::string::npos, e.what());
    }
  }
}

TEST_CASE("the ring keeps the last N calls, oldest first, with their states and plans") {
  setenv("STRATA_FLIGHT_RECORDS", std::to_string(kRecords).c_str(), 1);
  setenv("STRATA_FLIGHT_DIR", folder().c_str(), 1);
  flight::start();
  flight::configure_file(0, 1);
  REQUIRE(flight::file_enabled());
  for (std::uint64_t s = 1; s <= 12; ++s) {
    const flight::Entry entry = flight::begin(facts(s));
    if (s % 2 == 0) flight::mark_checked();
    if (s < 12) flight::end(entry, s == 11 ? flight::State::failed : flight::State::completed, "pscpu/xring#2");
  }
  REQUIRE(flight::write_file("on_demand", "from the unit test"));
  const std::vector<std::string> lines = call_lines(flight::file_path());
  REQUIRE(lines.size() == kRecords);
  for (std::size_t i = 0; i < kRecords; ++i)
    CHECK_MESSAGE(lines[i].find(" seq=" + std::to_string(12 - kRecords + 1 + i) + " ") != std::string::npos, lines[i]);
  CHECK(lines[0].find("comm=7 rank=1 size=3") != std::string::npos);
  CHECK(lines[0].find("collective=all_reduce count=108 dtype=f32 op=sum root=-1 form=blocking") != std::string::npos);
  CHECK_MESSAGE(lines[0].find("state=completed") != std::string::npos, lines[0]);  // #8
  CHECK(lines[0].find("plan=pscpu/xring#2") != std::string::npos);
  CHECK_MESSAGE(lines[3].find("state=failed") != std::string::npos, lines[3]);  // #11
  CHECK_MESSAGE(lines[4].find("state=checked") != std::string::npos, lines[4]);  // #12: checked, not ended
  CHECK_MESSAGE(lines[4].find("ended_ns=0 plan=-") != std::string::npos, lines[4]);
  const std::string text = text_of(flight::file_path());
  CHECK(text.find("reason=on_demand") != std::string::npos);
  CHECK(text.find("detail from the unit test") != std::string::npos);
  CHECK(text.find("records=5 calls=12 rings=1") != std::string::npos);
}

TEST_CASE("each thread keeps its own last N calls; the file merges the rings by time; an ended thread's ring is reused") {
  // (The ring of the case above, this thread's, holds seq 8..12 of comm 7.)
  const auto calls_on = [](std::uint32_t comm, std::uint64_t first, std::uint64_t last) {
    for (std::uint64_t s = first; s <= last; ++s) {
      flight::CallFacts f = facts(s);
      f.comm = comm;
      flight::end(flight::begin(f), flight::State::completed, "xring");
    }
  };
  std::thread([&] { calls_on(8, 1, 7); }).join();  // a second ring: seq 3..7 of comm 8 kept
  calls_on(7, 13, 13);                              // this thread's, after the other's
  REQUIRE(flight::write_file("on_demand", ""));
  std::vector<std::string> lines = call_lines(flight::file_path());
  REQUIRE(lines.size() == 2 * kRecords);
  const auto is = [&](std::size_t i, const std::string& what) {
    CHECK_MESSAGE(lines[i].find(what) != std::string::npos, "line " << i << ": " << lines[i] << " (want " << what << ")");
  };
  is(0, "comm=7 rank=1 size=3 seq=9 ");  // this thread's oldest kept, then the other thread's calls (later), ...
  for (std::size_t i = 0; i < kRecords; ++i) is(kRecords - 1 + i, "comm=8 rank=1 size=3 seq=" + std::to_string(3 + i) + " ");
  is(2 * kRecords - 1, "comm=7 rank=1 size=3 seq=13 ");  // ... and this thread's newest, last
  CHECK(text_of(flight::file_path()).find("calls=20 rings=2") != std::string::npos);

  // A new thread takes the ended thread's ring: still two rings.
  std::thread([&] { calls_on(9, 1, 2); }).join();
  REQUIRE(flight::write_file("on_demand", ""));
  lines = call_lines(flight::file_path());
  CHECK(text_of(flight::file_path()).find("calls=22 rings=2") != std::string::npos);
  REQUIRE(lines.size() == 2 * kRecords);
  is(2 * kRecords - 2, "comm=9 rank=1 size=3 seq=1 ");
  is(2 * kRecords - 1, "comm=9 rank=1 size=3 seq=2 ");
}

namespace {

// In a child: the handlers installed over `previous` (a handler that exits
// 42, or none), then `sig`. Returns the child's wait status.
int crash_child(int sig, bool previous) {
  const pid_t child = fork();
  if (child == 0) {
    signal(sig, SIG_DFL);  // (not doctest's crash handler: the child must not go on as the test)
    if (previous) {
      struct sigaction action {};
      action.sa_handler = [](int) { _exit(42); };
      sigaction(sig, &action, nullptr);
    }
    flight::install_signal_handlers();
    flight::begin(facts(99));
    if (sig == SIGSEGV) {
      // A real fault (not undefined behaviour the sanitizers would stop
      // first): the handler returns and the store faults again.
      void* page = mmap(nullptr, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      *static_cast<volatile int*>(page) = 1;
    }
    raise(sig);
    _exit(0);
  }
  int status = 0;
  waitpid(child, &status, 0);
  return status;
}

}  // namespace

TEST_CASE("a fatal signal writes the file, then goes on as it would have") {
  REQUIRE(flight::file_enabled());
  SUBCASE("SIGSEGV, default action: the process dies of it") {
    std::filesystem::remove(flight::file_path());
    const int status = crash_child(SIGSEGV, false);
    CHECK(WIFSIGNALED(status));
    CHECK(WTERMSIG(status) == SIGSEGV);
    const std::string text = text_of(flight::file_path());
    CHECK_MESSAGE(text.find("reason=SIGSEGV") != std::string::npos, text);
    CHECK_MESSAGE(text.find(" seq=99 ") != std::string::npos, text);
  }
  SUBCASE("SIGABRT and SIGBUS, the application's handler installed before: it runs") {
    for (const auto& [sig, name] : {std::pair{SIGABRT, "SIGABRT"}, std::pair{SIGBUS, "SIGBUS"}}) {
      CAPTURE(name);
      std::filesystem::remove(flight::file_path());
      const int status = crash_child(sig, true);
      CHECK(WIFEXITED(status));
      CHECK(WEXITSTATUS(status) == 42);
      CHECK(text_of(flight::file_path()).find(std::string("reason=") + name) != std::string::npos);
    }
  }
}

TEST_CASE("(the folder goes)") { std::filesystem::remove_all(folder()); }
