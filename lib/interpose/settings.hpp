// Process-wide switches: what the environment asks for and what the MPI
// library allows. Each is identical on every rank of a correct program
// (same environment, same MPI, same thread level), which keeps the routing
// decision identical on every rank.
#pragma once

namespace strata::interpose {

// process_refusal()'s answer before MPI_Init and from MPI_Finalize on, when
// the interposer must not even ask MPI for names to log.
inline constexpr const char* kMpiNotRunning = "MPI is not running";

// Why no call of this process may go to strata right now, or nullptr when
// calls may (subject to their own arguments). In order of checking:
//   "STRATA_INTERPOSE=off"      - the environment turned routing off;
//   "MPI is not running"        - before MPI_Init, or MPI_Finalize has begun;
//   "MPI_THREAD_MULTIPLE"       - see docs/INTERPOSER.md, "Thread levels";
//   "MPI is CUDA-aware"         - buffers may be device memory.
// Never throws. Cheap after the first call (cached answers and one atomic).
const char* process_refusal() noexcept;

// STRATA_INTERPOSE_TIMEOUT in seconds (0 = none): the timeout_seconds of
// every call routed to strata. An invalid value is reported once (WARN) and
// means 0.
double call_timeout_seconds() noexcept;

// Called when MPI_Finalize starts (the MPI_COMM_SELF attribute hook): from
// then on process_refusal() says "MPI is not running".
void mark_finalizing() noexcept;

}  // namespace strata::interpose
