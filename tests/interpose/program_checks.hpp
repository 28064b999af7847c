// What the interposer's C++ test programs (requests.cpp, first_started.cpp)
// share: the persistent all-reduce this MPI library offers, and one rank's tally of
// checks, printed as the "<program>: rank R: ..." lines check_interpose.py
// reads.
#pragma once

#include <mpi.h>
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>  // Open MPI's extensions: MPIX_Allreduce_init
#endif

#include <cstdarg>
#include <cstdio>

// The persistent all-reduce this MPI library provides, looked up when the
// program runs rather than read from MPI_VERSION: Open MPI 5's mpi.h says
// MPI 3.1 yet its libmpi exports MPI_Allreduce_init; Open MPI 4.1 has only
// its MPIX_ extension. A weak reference is null where no library loaded
// defines the symbol (with the interposer preloaded, its definition wins).
extern "C" int MPI_Allreduce_init(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                                  MPI_Comm comm, MPI_Info info, MPI_Request* request) __attribute__((weak));

namespace program_checks {

// The program's name and this rank's MPI_COMM_WORLD rank, set by main
// before the first check; the checks made and failed so far.
inline const char* program = "";
inline int rank = 0;
inline int checks = 0, failures = 0;

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
