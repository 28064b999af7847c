// STRATA_CHECK_MPI: turn an MPI return code into a BackendError at the call
// site, naming the call, file:line, MPI's own error text, host and rank.
// (Its CUDA and NCCL siblings live in the GPU plugin: gpu_plugin/cuda/check.hpp.)
#pragma once

#include <mpi.h>

namespace strata::util {

[[noreturn]] void throw_mpi_error(int code, const char* call, const char* file, int line);

}  // namespace strata::util

#define STRATA_CHECK_MPI(call)                                                        \
  do {                                                                                \
    const int strata_mpi_rc_ = (call);                                                \
    if (strata_mpi_rc_ != MPI_SUCCESS)                                                \
      ::strata::util::throw_mpi_error(strata_mpi_rc_, #call, __FILE__, __LINE__);     \
  } while (0)
