// The double's own test program (selftest/main.cpp): how its cases check
// what they are handed, and how they register.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "harness_checks.hpp"

namespace selftest {

// Counts a failed check and says which (on stdout; the double speaks on
// stderr); while `ranks` routes them, the MPI test harness's checks count
// and print it, with the rank.
void check(bool ok, const std::string& what);
void route_checks(strata::test::RankChecks* ranks);
// `got` must be `want`.
void expect(cudaError_t got, cudaError_t want, const std::string& what);
// Whether every check so far passed.
bool all_passed();
#define SELFTEST_OK(call) ::selftest::expect((call), cudaSuccess, #call)

using Case = void (*)();
struct Entry {
  Case run;
  const char* what;
};
using Cases = std::map<std::string, Entry>;

void add_capture_cases(Cases& cases);
void add_rule_cases(Cases& cases);
void add_memory_cases(Cases& cases);
void add_nccl_cases(Cases& cases);

// A new stream of the current device, non-blocking unless `flags` say otherwise.
cudaStream_t new_stream(unsigned flags = cudaStreamNonBlocking);
// A new event without timing (cudaEventDisableTiming), the kind strata records.
cudaEvent_t untimed_event();
// Device memory of `bytes` on the current device, every byte `value` (0xCB, what new memory holds, is not written).
unsigned char* device_bytes(std::size_t bytes, int value = 0xCB);
// What the device holds at `p`, read by a synchronous copy.
std::vector<unsigned char> read_back(const void* p, std::size_t bytes);
// Whether every byte of `bytes` is `value`.
bool all_are(const std::vector<unsigned char>& bytes, int value);
bool all_are(const unsigned char* p, std::size_t bytes, int value);

}  // namespace selftest
