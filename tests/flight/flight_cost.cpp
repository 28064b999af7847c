// What the flight recorder costs a call: the time of begin, mark_checked
// and end (every call's part, util/flight_recorder.hpp) in a loop on one
// thread, against the same loop without them. Prints nanoseconds per call;
// asserts nothing about time (docs/PERFORMANCE.md, "Cost of the flight
// recorder", has the figure and this command):
//
//   build-dev/tests/flight/flight_cost [calls]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string_view>

#include "util/flight_recorder.hpp"

using strata::util::flight::CallFacts;
using Clock = std::chrono::steady_clock;

namespace {

double ns_per_call(long calls, bool recorded) {
  CallFacts facts{.comm = 1, .rank = 0, .size = 4, .count = 1000, .dtype = 0, .op = 0};
  const std::string_view plan = "pscpu/xring#2";
  const auto start = Clock::now();
  for (long i = 0; i < calls; ++i) {
    facts.sequence = static_cast<std::uint64_t>(i) + 1;
    if (recorded) {
      const strata::util::flight::Entry entry = strata::util::flight::begin(facts);
      strata::util::flight::mark_checked();
      strata::util::flight::end(entry, strata::util::flight::State::completed, plan);
    }
    asm volatile("" : : "r"(&facts) : "memory");  // (the loop stays a loop)
  }
  return std::chrono::duration<double, std::nano>(Clock::now() - start).count() / static_cast<double>(calls);
}

// One read of the records' clock (util::flight::now_ticks), which a call
// makes twice (started, ended).
double ns_per_tick_read(long reads) {
  std::uint64_t sum = 0;
  const auto start = Clock::now();
  for (long i = 0; i < reads; ++i) sum += strata::util::flight::now_ticks();
  asm volatile("" : : "r"(sum));
  return std::chrono::duration<double, std::nano>(Clock::now() - start).count() / static_cast<double>(reads);
}

}  // namespace

int main(int argc, char** argv) {
  const long calls = argc > 1 ? std::atol(argv[1]) : 10'000'000;
  if (calls <= 0) {
    std::fprintf(stderr, "flight_cost [calls > 0]\n");
    return 2;
  }
  strata::util::flight::start();
  ns_per_call(calls / 10, true);  // warm: the ring's pages, the branch predictors
  double best = 1e9, empty = 1e9, tick = 1e9;
  for (int round = 0; round < 5; ++round) {  // the best of 5: the machine's other work only adds
    best = std::min(best, ns_per_call(calls, true));
    empty = std::min(empty, ns_per_call(calls, false));
    tick = std::min(tick, ns_per_tick_read(calls));
  }
  std::printf("flight recorder: %.1f ns per call (begin + mark_checked + end, best of 5 x %ld calls; the empty "
              "loop %.1f ns); one clock read (2 per call): %.1f ns\n",
              best - empty, calls, empty, tick);
  return 0;
}
