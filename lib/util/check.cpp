#include "util/check.hpp"

#include <fmt/format.h>

#include "util/where.hpp"
#include "strata/errors.hpp"

namespace strata::util {

void throw_mpi_error(int code, const char* call, const char* file, int line) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) fmt::format_to_n(text, sizeof text - 1, "code {}", code);
  throw BackendError(fmt::format("strata [{}]: MPI call {} failed at {}:{}: {}", where(), call, file, line, text),
                     "MPI", code, hostname(), world_rank());
}

}  // namespace strata::util
