/* The MPI 5.0 standard ABI as strata's sources see it when they are
 * compiled into libstrata_mpi_abi.so (lib/interpose/meson.build): they
 * include <mpi.h>, and this folder comes first on that target's include
 * path, so they get the standard's mpi_abi.h (handles, constants and
 * prototypes fixed by the standard, the same for MPICH 5, Intel MPI and
 * every other MPI that ships libmpi_abi.so.1) rather than one
 * implementation's own mpi.h. */
#ifndef STRATA_MPI_ABI_WRAPPER_H
#define STRATA_MPI_ABI_WRAPPER_H
#include <mpi_abi.h>
#endif
