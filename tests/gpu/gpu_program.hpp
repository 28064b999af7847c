// The start and end of every GPU test program on MPI: the device check
// (exit 77 without one), MPI and the program's checks (the MPI harness's
// core, tests/mpi/harness_core.hpp: a watchdog over the program, per-rank
// checks combined over the ranks).
#pragma once

#include <cuda_runtime.h>
#include <mpi.h>

#include "gpu_test.hpp"
#include "harness_core.hpp"
#include "strata/strata.hpp"

namespace strata::gpu_test {

struct ProgramStart {
  int rank = 0, size = 1;
  int thread_level = MPI_THREAD_SINGLE;  // what MPI provides
};

// First in main: exits 77 without a usable CUDA device, else initialises
// MPI asking for `thread_level` and starts the program's checks
// (test::start_program_checks, bounded by STRATA_TEST_WATCHDOG_S or 300 s).
inline ProgramStart start_program(int* argc, char*** argv, const char* program,
                                  int thread_level = MPI_THREAD_SINGLE) {
  skip_without_device(program);
  ProgramStart start;
  MPI_Init_thread(argc, argv, thread_level, &start.thread_level);
  test::start_program_checks(program, 300);
  start.rank = test::world_rank();
  start.size = test::world_size();
  return start;
}

// Collective over MPI_COMM_WORLD: makes the CUDA device strata assigns this
// rank current and returns it; `nodes`, where given, receives the number
// of (virtual) nodes. A communicator made for the purpose and let go.
inline int use_rank_device(int* nodes = nullptr) {
  Communicator probe(MPI_COMM_WORLD);
  const int device = probe.topology().ranks[std::size_t(test::world_rank())].gpu.cuda_device;
  if (nodes) *nodes = int(probe.topology().nodes.size());
  cudaSetDevice(device);
  return device;
}

// Last in main (collective): combines every rank's checks, finalises MPI
// and returns the exit status, 0 iff no rank failed a check.
inline int end_program() {
  const int status = test::finish_program_checks();
  MPI_Finalize();
  return status;
}

}  // namespace strata::gpu_test
