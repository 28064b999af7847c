// The TensorFlow-named facades (strata/cross_device_ops.hpp) for Python.
#pragma once

#include <pybind11/pybind11.h>

namespace strata_py {

// Defines CrossDeviceOps, NcclAllReduce, MultiWorkerAllReduce and
// ReductionToOneDevice on `m`. Needs the Communicator binding first.
void bind_facades(pybind11::module_& m);

}  // namespace strata_py
