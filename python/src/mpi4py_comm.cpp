// mpi4py's C API. Its header defines static function pointers that
// import_mpi4py() fills per translation unit, so it is used in this file only.
#include <mpi4py/mpi4py.h>
#include <fmt/format.h>

#include "communicator.hpp"
#include "util/where.hpp"

namespace strata_py {

MPI_Comm mpi_comm_of(py::handle comm) {
  // Imported on first use, not at `import strata`: strata/__init__.py has
  // already imported mpi4py.MPI (and so initialised MPI) by then.
  static bool imported = false;
  if (!imported) {
    if (import_mpi4py() < 0) throw py::error_already_set();
    imported = true;
  }
  if (!PyObject_TypeCheck(comm.ptr(), &PyMPIComm_Type))
    throw py::type_error(fmt::format("comm is a {}: pass an mpi4py communicator such as mpi4py.MPI.COMM_WORLD (or a "
                                     "strata.Communicator where one is accepted)",
                                     Py_TYPE(comm.ptr())->tp_name));
  MPI_Comm* handle = PyMPIComm_Get(comm.ptr());
  if (handle == nullptr) throw py::error_already_set();
  if (*handle == MPI_COMM_NULL)
    throw strata::InvalidArgument(strata::util::located("comm is MPI.COMM_NULL: pass a valid communicator"));
  return *handle;
}

}  // namespace strata_py
