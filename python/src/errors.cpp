#include "errors.hpp"

#include <string>

#include "cuda_support.hpp"
#include "strata/errors.hpp"

namespace strata_py {

namespace {

// The Python classes, looked up once at import. Leaked on purpose: they must
// outlive every translation, and Python tears modules down on its own.
struct Classes {
  py::object error, invalid_argument, deadline_exceeded, mismatch, peer_failure, unavailable, backend_error, corrupted;
};
Classes* classes = nullptr;

void raise(const py::object& cls, const py::object& instance) { PyErr_SetObject(cls.ptr(), instance.ptr()); }

void translate(std::exception_ptr p) {
  try {
    if (p) std::rethrow_exception(p);
  } catch (const strata::DeadlineExceeded& e) {
    py::list waiting_for, in_earlier_call;
    for (int rank : e.waiting_for()) waiting_for.append(rank);
    for (int rank : e.in_earlier_call()) in_earlier_call.append(rank);
    raise(classes->deadline_exceeded, classes->deadline_exceeded(e.what(), waiting_for, in_earlier_call));
  } catch (const strata::BackendError& e) {
    raise(classes->backend_error, classes->backend_error(e.what(), e.backend(), e.code(), e.host(), e.rank()));
  } catch (const strata::InvalidArgument& e) {
    raise(classes->invalid_argument, classes->invalid_argument(e.what()));
  } catch (const strata::Mismatch& e) {
    raise(classes->mismatch, classes->mismatch(e.what()));
  } catch (const strata::Corrupted& e) {
    raise(classes->corrupted, classes->corrupted(e.what()));
  } catch (const strata::PeerFailure& e) {
    raise(classes->peer_failure, classes->peer_failure(e.what()));
  } catch (const strata::Unavailable& e) {
    // Where this module could not load the CUDA runtime for a CUDA array,
    // say so too: the library's reason may not name the missing library.
    const std::string problem = cuda::runtime_problem();
    const std::string message = problem.empty() ? std::string(e.what())
                                                : std::string(e.what()) + " (strata's Python module: " + problem + ")";
    raise(classes->unavailable, classes->unavailable(message));
  } catch (const strata::Error& e) {
    raise(classes->error, classes->error(e.what()));
  }
  // Anything else propagates to pybind11's own translators.
}

[[noreturn]] void throw_for_test(const std::string& kind, const std::string& message) {
  if (kind == "Error") throw strata::Error(message);
  if (kind == "InvalidArgument") throw strata::InvalidArgument(message);
  if (kind == "DeadlineExceeded") throw strata::DeadlineExceeded(message, {1, 3}, {2});
  if (kind == "Mismatch") throw strata::Mismatch(message);
  if (kind == "Corrupted") throw strata::Corrupted(message);
  if (kind == "PeerFailure") throw strata::PeerFailure(message);
  if (kind == "Unavailable") throw strata::Unavailable(message);
  if (kind == "BackendError") throw strata::BackendError(message, "MPI", 15, "node7", 2);
  throw py::value_error("_throw_for_test: unknown kind '" + kind + "'");
}

}  // namespace

void register_errors(py::module_& m) {
  py::module_ errors = py::module_::import("strata.errors");
  classes = new Classes{errors.attr("Error"),       errors.attr("InvalidArgument"), errors.attr("DeadlineExceeded"),
                        errors.attr("Mismatch"),    errors.attr("PeerFailure"),     errors.attr("Unavailable"),
                        errors.attr("BackendError"), errors.attr("Corrupted")};
  py::register_exception_translator(translate);
  m.def("_throw_for_test", &throw_for_test, py::arg("kind"), py::arg("message"),
        "Throw the C++ strata exception `kind` (tests of the error translation only). DeadlineExceeded carries "
        "waiting_for [1, 3] and in_earlier_call [2]; BackendError backend 'MPI', code 15, host 'node7', rank 2.");
}

}  // namespace strata_py
