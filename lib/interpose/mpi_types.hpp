// Which MPI datatypes and operators strata serves exactly, and their names
// for log lines. Only predefined handles are mapped, each to the strata type
// of the same size and signedness (MPI_CHAR: as the MPI underneath reduces
// it, under Open MPI only; Fortran's REAL, DOUBLE PRECISION and INTEGER by
// MPI's size of them); everything else (16-bit and wider-than-64-bit
// integers, long double, complex, bool, LOGICAL, MPI_BYTE, pair types,
// derived types) and every operator other than MPI_SUM / MPI_PROD /
// MPI_MIN / MPI_MAX falls through to MPI.
#pragma once

#include <mpi.h>

#include <optional>
#include <string>

#include "strata/types.hpp"

namespace strata::interpose {

// The strata element type MPI_Allreduce / MPI_Reduce /
// MPI_Reduce_scatter_block on `type` maps to, or nullopt when strata does
// not reduce it. Local; never throws.
std::optional<DataType> reduction_dtype(MPI_Datatype type) noexcept;

// The strata operator for `op`, or nullopt (user-defined ops, MPI_LAND,
// MPI_BAND, MPI_MAXLOC, ...). Local; never throws.
std::optional<ReduceOp> reduction_op(MPI_Op op) noexcept;

// True for a predefined (named) datatype. Local; never throws.
bool is_named(MPI_Datatype type) noexcept;

// "MPI_INT", "derived datatype 'its name'" or "derived datatype", for log
// lines.
std::string type_name(MPI_Datatype type);

// "MPI_LAND" or "user-defined op", for log lines.
std::string op_name(MPI_Op op);

}  // namespace strata::interpose
