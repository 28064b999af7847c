// strata::mpi_datatype (strata/mpi_datatype.hpp).
#include "strata/mpi_datatype.hpp"

namespace strata {

MPI_Datatype mpi_datatype(DataType dtype) noexcept {
  switch (dtype) {
    case DataType::f32: return MPI_FLOAT;
    case DataType::f64: return MPI_DOUBLE;
    case DataType::f16:
    case DataType::bf16: return MPI_UINT16_T;
    case DataType::i8: return MPI_INT8_T;
    case DataType::u8: return MPI_UINT8_T;
    case DataType::i32: return MPI_INT32_T;
    case DataType::u32: return MPI_UINT32_T;
    case DataType::i64: return MPI_INT64_T;
    case DataType::u64: return MPI_UINT64_T;
  }
  return MPI_DATATYPE_NULL;
}

}  // namespace strata
