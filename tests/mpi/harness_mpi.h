// The MPI header the harness's core compiles against: the MPI 5.0 standard
// ABI's mpi_abi.h for programs built on that ABI (STRATA_TEST_MPI_ABI:
// tests/interpose/abi_collectives.cpp), else the configured MPI's mpi.h.
// The core uses only names both headers define.
#pragma once

#ifdef STRATA_TEST_MPI_ABI
#include <mpi_abi.h>
#else
#include <mpi.h>
#endif
