// strata's C++ errors as Python exceptions. The classes live in
// strata/errors.py (pure Python, so they carry attributes and docstrings);
// this file registers the translator that raises them.
#pragma once

#include <pybind11/pybind11.h>

namespace strata_py {

namespace py = pybind11;

// Imports strata.errors and registers a translator for strata::Error and its
// subclasses: InvalidArgument -> strata.InvalidArgument (a ValueError),
// DeadlineExceeded -> strata.DeadlineExceeded (a TimeoutError, with
// `waiting_for`), Mismatch, PeerFailure, Unavailable, BackendError (with
// backend, code, host, rank) -> the strata.Error (RuntimeError) subclass of
// the same name. Also defines `_throw_for_test(kind, message)` on `m`, which
// throws the C++ exception `kind` so tests can check the translation of
// errors this machine cannot provoke. Throws py::error_already_set if
// strata.errors cannot be imported.
void register_errors(py::module_& m);

}  // namespace strata_py
