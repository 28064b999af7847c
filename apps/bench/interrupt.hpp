// What strata-bench does when it is interrupted: Ctrl-C (SIGINT) on a run
// without mpirun, or mpirun stopping the job (it turns its own SIGINT or
// SIGTERM into SIGTERM for every rank). Rank 0 removes the -J/--csv files
// it is still writing (Output writes them under temporary names and
// renames them when complete, so nothing half-written is left under the
// names asked for) and says so in one line on stderr; every rank exits 130
// (128 + SIGINT: the shell's status for an interrupted command), the others
// half a second after the signal so that mpirun does not kill rank 0 before
// it said so. mpirun
// itself may exit with a status of its own (Open MPI 4.1: 1).
#pragma once

#include <string>

namespace bench::interrupt {

// The exit status of an interrupted run.
constexpr int kExitInterrupted = 130;

// Handles SIGINT and SIGTERM from now on (after MPI_Init: MPI may install
// handlers of its own). `rank` 0 prints the line.
void install(int rank);

// A file to remove if the run is interrupted before release(slot); -1 when
// every slot is taken (the file is then left behind on interruption).
int remember(const std::string& path);
void release(int slot);

}  // namespace bench::interrupt
