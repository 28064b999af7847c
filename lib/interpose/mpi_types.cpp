#include "mpi_types.hpp"

#include <climits>
#include <type_traits>

namespace strata::interpose {
namespace {

// C types whose size the mapping depends on. A platform where one of these
// differs fails to compile here rather than reducing the wrong width.
static_assert(sizeof(float) == 4 && sizeof(double) == 8, "IEEE binary32/binary64 expected");
static_assert(sizeof(int) == 4 && sizeof(unsigned) == 4, "32-bit int expected");
static_assert(sizeof(long long) == 8, "64-bit long long expected");
static_assert(CHAR_BIT == 8, "8-bit bytes expected");

#ifdef OPEN_MPI
constexpr bool kOpenMpiReducesChar = std::is_signed_v<char>;
#else
constexpr bool kOpenMpiReducesChar = false;
#endif

constexpr DataType kLong = sizeof(long) == 8 ? DataType::i64 : DataType::i32;
constexpr DataType kUnsignedLong = sizeof(long) == 8 ? DataType::u64 : DataType::u32;

// MPI's size of a predefined type, 0 where MPI does not give one.
int size_of(MPI_Datatype type) noexcept {
  int bytes = 0;
  return PMPI_Type_size(type, &bytes) == MPI_SUCCESS ? bytes : 0;
}

// Fortran's types (MPI's "Fortran integer" and "Floating point" groups).
// REAL, DOUBLE PRECISION and INTEGER have the widths of the Fortran
// compiler MPI was built with, so they map by MPI's size of them; a sized
// one (REAL4, INTEGER8, ...) maps only where MPI gives it its nominal size
// (Open MPI keeps the handle, at size 0, where its compiler lacks the
// kind). Checked after the C types, which C programs use: Fortran programs
// reach these through fortran.cpp.
std::optional<DataType> fortran_reduction_dtype(MPI_Datatype type) noexcept {
  const bool real = type == MPI_REAL || type == MPI_DOUBLE_PRECISION || type == MPI_REAL4 || type == MPI_REAL8;
  const bool integer = type == MPI_INTEGER || type == MPI_INTEGER1 || type == MPI_INTEGER4 || type == MPI_INTEGER8;
  if (!real && !integer) return std::nullopt;
  const int bytes = size_of(type);
  const int nominal = type == MPI_REAL4 || type == MPI_INTEGER4 ? 4
                      : type == MPI_REAL8 || type == MPI_INTEGER8 ? 8
                      : type == MPI_INTEGER1                      ? 1
                                                                  : bytes;
  if (bytes != nominal) return std::nullopt;
  if (real) {
    if (bytes == 4) return DataType::f32;
    if (bytes == 8) return DataType::f64;
    return std::nullopt;
  }
  if (bytes == 1) return DataType::i8;
  if (bytes == 4) return DataType::i32;
  if (bytes == 8) return DataType::i64;
  return std::nullopt;
}

}  // namespace

std::optional<DataType> reduction_dtype(MPI_Datatype type) noexcept {
  // Floating point (MPI's "Floating point" group, C types only).
  if (type == MPI_FLOAT) return DataType::f32;
  if (type == MPI_DOUBLE) return DataType::f64;
  // Integers (MPI's "C integer" group).
  if (type == MPI_INT8_T || type == MPI_SIGNED_CHAR) return DataType::i8;
  // MPI_CHAR is outside that group: the standard defines no reduction on
  // it. Open MPI reduces it anyway, as a signed 8-bit integer, and OSU's
  // benchmarks reduce it by default; where char is signed too, strata gives
  // the same bits. Elsewhere (MPICH rejects it) it goes to MPI.
  if (kOpenMpiReducesChar && type == MPI_CHAR) return DataType::i8;
  if (type == MPI_UINT8_T || type == MPI_UNSIGNED_CHAR) return DataType::u8;
  if (type == MPI_INT32_T || type == MPI_INT) return DataType::i32;
  if (type == MPI_UINT32_T || type == MPI_UNSIGNED) return DataType::u32;
  if (type == MPI_INT64_T || type == MPI_LONG_LONG_INT || type == MPI_LONG_LONG) return DataType::i64;
  if (type == MPI_UINT64_T || type == MPI_UNSIGNED_LONG_LONG) return DataType::u64;
  if (type == MPI_LONG) return kLong;
  if (type == MPI_UNSIGNED_LONG) return kUnsignedLong;
  return fortran_reduction_dtype(type);
}

std::optional<ReduceOp> reduction_op(MPI_Op op) noexcept {
  if (op == MPI_SUM) return ReduceOp::sum;
  if (op == MPI_PROD) return ReduceOp::prod;
  if (op == MPI_MIN) return ReduceOp::min;
  if (op == MPI_MAX) return ReduceOp::max;
  return std::nullopt;
}

bool is_named(MPI_Datatype type) noexcept {
  if (type == MPI_DATATYPE_NULL) return false;
  int integers = 0, addresses = 0, datatypes = 0, combiner = 0;
  if (PMPI_Type_get_envelope(type, &integers, &addresses, &datatypes, &combiner) != MPI_SUCCESS) return false;
  return combiner == MPI_COMBINER_NAMED;
}

std::string type_name(MPI_Datatype type) {
  if (type == MPI_DATATYPE_NULL) return "MPI_DATATYPE_NULL";
  char name[MPI_MAX_OBJECT_NAME] = {};
  int length = 0;
  if (PMPI_Type_get_name(type, name, &length) != MPI_SUCCESS) length = 0;
  const bool named = is_named(type);
  if (length == 0) return named ? "predefined datatype" : "derived datatype";
  return named ? std::string(name, length) : "derived datatype '" + std::string(name, length) + "'";
}

std::string op_name(MPI_Op op) {
  struct Named {
    MPI_Op op;
    const char* name;
  };
  const Named predefined[] = {
      {MPI_MAX, "MPI_MAX"},       {MPI_MIN, "MPI_MIN"},       {MPI_SUM, "MPI_SUM"},         {MPI_PROD, "MPI_PROD"},
      {MPI_LAND, "MPI_LAND"},     {MPI_BAND, "MPI_BAND"},     {MPI_LOR, "MPI_LOR"},         {MPI_BOR, "MPI_BOR"},
      {MPI_LXOR, "MPI_LXOR"},     {MPI_BXOR, "MPI_BXOR"},     {MPI_MAXLOC, "MPI_MAXLOC"},   {MPI_MINLOC, "MPI_MINLOC"},
      {MPI_REPLACE, "MPI_REPLACE"}, {MPI_NO_OP, "MPI_NO_OP"}, {MPI_OP_NULL, "MPI_OP_NULL"},
  };
  for (const Named& n : predefined)
    if (n.op == op) return n.name;
  return "user-defined op";
}

}  // namespace strata::interpose
