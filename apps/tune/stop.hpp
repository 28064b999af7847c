// Stopping cleanly on Ctrl-C (SIGINT) or SIGTERM (what mpirun sends every
// rank when it is interrupted). strata-bench drops an unfinished run
// (apps/bench/interrupt.hpp); strata-tune keeps what it measured: the
// handler only notes the signal, and the ranks agree at the next step
// boundary to stop together and write the sizes measured so far. A second
// signal ends the process at once (the handler is reset after the first).
#pragma once

#include <mpi.h>

namespace tune::stop {

// The exit status of an interrupted run (128 + SIGINT, as strata-bench's).
constexpr int kExitInterrupted = 130;

// Handles SIGINT and SIGTERM from now on (after MPI_Init).
void install();

// Collective over comm: true on every rank when any rank has been signalled.
bool agreed(MPI_Comm comm);

// The signal this rank received (0: none), for the message.
int signal_seen();

}  // namespace tune::stop
