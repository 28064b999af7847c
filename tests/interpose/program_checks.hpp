// What the interposer's C++ test programs (requests.cpp, first_started.cpp)
// share: the persistent all-reduce this MPI offers, and one rank's tally of
// checks, printed as the "<program>: rank R: ..." lines check_interpose.py
// reads.
#pragma once

#include <mpi.h>
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>  // Open MPI's extensions: MPIX_Allreduce_init
#endif

#include <cstdarg>
#include <cstdio>

// ALLREDUCE_INIT: MPIX_Allreduce_init (Open MPI's extension) or
// MPI_Allreduce_init (MPI 4); undefined where MPI has neither.
// ALLREDUCE_INIT_NAME names it, or is "none".
#if defined(OMPI_HAVE_MPI_EXT_PCOLLREQ)
#define ALLREDUCE_INIT MPIX_Allreduce_init
#define ALLREDUCE_INIT_NAME "MPIX_Allreduce_init"
#elif MPI_VERSION >= 4
#define ALLREDUCE_INIT MPI_Allreduce_init
#define ALLREDUCE_INIT_NAME "MPI_Allreduce_init"
#else
#define ALLREDUCE_INIT_NAME "none"
#endif

namespace program_checks {

// The program's name and this rank's MPI_COMM_WORLD rank, set by main
// before the first check; the checks made and failed so far.
inline const char* program = "";
inline int rank = 0;
inline int checks = 0, failures = 0;

// Counts a check; a failed one prints "<program>: rank R: FAIL <text>"
// (the first 40 of them).
inline void check(bool ok, const char* format, ...) {
  ++checks;
  if (ok) return;
  if (++failures > 40) return;
  char text[512];
  std::va_list args;
  va_start(args, format);
  std::vsnprintf(text, sizeof text, format, args);
  va_end(args);
  std::printf("%s: rank %d: FAIL %s\n", program, rank, text);
}

// Prints "<program>: rank R: N of M checks passed"; returns the exit
// status: 0 when every check passed.
inline int passed() {
  std::printf("%s: rank %d: %d of %d checks passed\n", program, rank, checks - failures, checks);
  return failures == 0 ? 0 : 1;
}

}  // namespace program_checks
