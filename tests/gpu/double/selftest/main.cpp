// Tests of the CUDA runtime and NCCL test double itself (suite 'double';
// docs/GPU_DOUBLE.md): stream capture and graph replay, the rules capture
// enforces, pageable uploads, the gate and busy kernels, and NCCL's
// threading rule and graph replays across ranks.
//
//     test_double_capture CASE      (--list: the cases)
//
// A case checks the error codes and results it is handed and prints
// "test_double_capture CASE: checks passed" when they are all as
// expected. Cases that do what CUDA or NCCL forbid run as separate
// invocations through expect_violation.py, which also wants the double's
// violation status (86) and its message; the others must exit 0. A failed
// check ends the process with status 1 at once (_exit: the double's exit
// status would otherwise replace it).
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "check.hpp"

namespace selftest {
namespace {
int failed = 0;
strata::test::RankChecks* routed = nullptr;
}  // namespace

void check(bool ok, const std::string& what) {
  if (routed) {
    if (!routed->check(ok, what)) ++failed;
    return;
  }
  if (ok) return;
  ++failed;
  std::printf("FAIL: %s\n", what.c_str());
  std::fflush(stdout);
}

void route_checks(strata::test::RankChecks* ranks) { routed = ranks; }

bool all_passed() { return failed == 0; }

void expect(cudaError_t got, cudaError_t want, const std::string& what) {
  check(got == want, what + ": " + cudaGetErrorName(got) + ", expected " + cudaGetErrorName(want));
}

cudaStream_t new_stream(unsigned flags) {
  cudaStream_t s = nullptr;
  SELFTEST_OK(cudaStreamCreateWithFlags(&s, flags));
  return s;
}

cudaEvent_t untimed_event() {
  cudaEvent_t e = nullptr;
  SELFTEST_OK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  return e;
}

unsigned char* device_bytes(std::size_t bytes, int value) {
  void* p = nullptr;
  SELFTEST_OK(cudaMalloc(&p, bytes));
  if (value != 0xCB) SELFTEST_OK(cudaMemset(p, value, bytes));
  return static_cast<unsigned char*>(p);
}

std::vector<unsigned char> read_back(const void* p, std::size_t bytes) {
  std::vector<unsigned char> out(bytes);
  SELFTEST_OK(cudaMemcpy(out.data(), p, bytes, cudaMemcpyDeviceToHost));
  return out;
}

bool all_are(const unsigned char* p, std::size_t bytes, int value) {
  for (std::size_t i = 0; i < bytes; ++i)
    if (p[i] != static_cast<unsigned char>(value)) return false;
  return true;
}

bool all_are(const std::vector<unsigned char>& bytes, int value) { return all_are(bytes.data(), bytes.size(), value); }

}  // namespace selftest

int main(int argc, char** argv) {
  using namespace selftest;
  Cases cases;
  add_capture_cases(cases);
  add_rule_cases(cases);
  add_memory_cases(cases);
  add_nccl_cases(cases);
  const char* program = "test_double_capture";
  if (argc == 2 && std::strcmp(argv[1], "--list") == 0) {
    for (const auto& [name, entry] : cases) std::printf("%-28s %s\n", name.c_str(), entry.what);
    return 0;
  }
  const auto it = argc == 2 ? cases.find(argv[1]) : cases.end();
  if (it == cases.end()) {
    std::fprintf(stderr, "usage: %s CASE (--list: the cases)\n", program);
    return 2;
  }
  it->second.run();
  if (failed > 0) {
    std::printf("%s %s: %d check(s) failed\n", program, argv[1], failed);
    std::fflush(stdout);
    ::_exit(1);
  }
  std::printf("%s %s: checks passed\n", program, argv[1]);
  std::fflush(stdout);
  return 0;
}
