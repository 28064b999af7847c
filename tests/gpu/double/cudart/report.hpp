// How the test double speaks. A *violation* is a use of the CUDA runtime or
// NCCL that real hardware would punish (a host pointer given as device
// memory, a buffer freed while queued work still reads it, a kernel
// launched with the wrong device current, ranks whose NCCL calls diverge)
// or that strata's contract forbids. Each is printed at once, naming the
// call and what was wrong, and counted; a process with any violation exits
// with status 86 when it ends, even if the caller ignored the error code it
// was given. What real CUDA or NCCL would turn into a hang ends the process
// instead (fatal), after the same kind of message.
#pragma once

#include <fmt/format.h>

#include <string>

namespace gpu_double {

inline constexpr int kViolationExitStatus = 86;

// "rank R (pid P)": the process as messages name it.
std::string who();

void violation(const char* call, const std::string& what);
[[noreturn]] void fatal(const char* call, const std::string& what);
// STRATA_FAKE_TRACE=1 only.
void trace(const std::string& what);
// Violations so far in this process.
int violations();

}  // namespace gpu_double
