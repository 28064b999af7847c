// The MPI datatype that carries a strata DataType, for programs that move
// strata's tensors with MPI themselves (a baseline to compare against, an
// exchange of their own). strata's `mpi` algorithm uses the same table.
#pragma once

#include <mpi.h>

#include "strata/types.hpp"

namespace strata {

// MPI_FLOAT, MPI_DOUBLE, MPI_INT8_T, MPI_UINT8_T, MPI_INT32_T, MPI_UINT32_T,
// MPI_INT64_T, MPI_UINT64_T for f32 ... u64. f16 and bf16: MPI_UINT16_T,
// which moves them (broadcast, send) but which no MPI operator reduces as
// floating point. MPI_DATATYPE_NULL for a value outside DataType. Local;
// never throws.
MPI_Datatype mpi_datatype(DataType dtype) noexcept;

}  // namespace strata
