// What the interposer's C++ test programs (requests.cpp, first_started.cpp)
// share: the persistent all-reduce this MPI library offers, and printf-style
// checks on the MPI harness's core (tests/mpi/harness_core.hpp: a watchdog
// over the program, one rank's tally printed as the "<program>: rank R: P
// of N checks passed" line check_interpose.py reads; no MPI call of its
// own, so the interposer's logs hold the program's calls only).
#pragma once

#include <mpi.h>
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>  // Open MPI's extensions: MPIX_Allreduce_init
#endif

#include <cstdarg>
#include <cstdio>

#include "harness_core.hpp"

// The persistent all-reduce this MPI library provides, looked up when the
// program runs rather than read from MPI_VERSION: Open MPI 5's mpi.h says
// MPI 3.1 yet its libmpi exports MPI_Allreduce_init; Open MPI 4.1 has only
// its MPIX_ extension. A weak reference is null where no library loaded
// defines the symbol (with the interposer preloaded, its definition wins).
extern "C" int MPI_Allreduce_init(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                                  MPI_Comm comm, MPI_Info info, MPI_Request* request) __attribute__((weak));

namespace program_checks {

// This rank in MPI_COMM_WORLD, set by start.
inline int rank = 0;

// After MPI_Init, before the first check: the program's checks, its
// watchdog bounded by STRATA_TEST_WATCHDOG_S or `bound_seconds`.
inline void start(const char* program, int bound_seconds) {
  strata::test::start_program_checks(program, bound_seconds);
  rank = strata::test::world_rank();
}

using AllReduceInit = int (*)(const void*, void*, int, MPI_Datatype, MPI_Op, MPI_Comm, MPI_Info, MPI_Request*);

// MPI_Allreduce_init where the library has it, else MPIX_Allreduce_init
// (Open MPI's pcollreq extension), else nullptr; `name` names it ("none").
struct PersistentAllReduce {
  AllReduceInit call;
  const char* name;
};

inline PersistentAllReduce persistent_all_reduce() {
  if (MPI_Allreduce_init != nullptr) return {MPI_Allreduce_init, "MPI_Allreduce_init"};
#if defined(OMPI_HAVE_MPI_EXT_PCOLLREQ)
  return {MPIX_Allreduce_init, "MPIX_Allreduce_init"};
#else
  return {nullptr, "none"};
#endif
}

// Counts a check; a failed one prints "<program>: FAIL on rank R: <text>"
// (the first 40 of them).
inline void check(bool ok, const char* format, ...) {
  char text[512];
  std::va_list args;
  va_start(args, format);
  std::vsnprintf(text, sizeof text, format, args);
  va_end(args);
  strata::test::rank_check(ok, text);
}

// Prints "<program>: rank R: P of N checks passed"; returns the exit
// status: 0 when every check on this rank passed.
inline int passed() { return strata::test::program_checks().finish_rank(); }

}  // namespace program_checks
