#include "request.hpp"

#include <fmt/format.h>

#include <utility>

namespace strata_py {

PyRequest::PyRequest(std::shared_ptr<PyCommunicator> comm, strata::Request request, CallArrays arrays,
                     py::object result, std::string name)
    : comm_(std::move(comm)),
      request_(std::move(request)),
      persistent_(request_.persistent()),
      arrays_(std::move(arrays)),
      result_(std::move(result)),
      name_(std::move(name)) {}

PyRequest::~PyRequest() {
  py::gil_scoped_release release;  // the run may wait for the other ranks
  comm_->locked([&] { strata::Request done = std::move(request_); });
}

void PyRequest::completed() {
  if (persistent_) return;  // bound to its arrays for good
  arrays_.views.reset();
  arrays_.objects.clear();
}

bool PyRequest::test() {
  bool done = false;
  try {
    py::gil_scoped_release release;
    done = comm_->locked([&] { return request_.test(); });
  } catch (...) {
    completed();  // the run failed: it is over (the GIL is held again here)
    throw;
  }
  if (done) completed();
  return done;
}

py::object PyRequest::wait() {
  try {
    py::gil_scoped_release release;
    comm_->locked([&] { request_.wait(); });
  } catch (...) {
    completed();
    throw;
  }
  completed();
  return result_;
}

void PyRequest::start() {
  py::gil_scoped_release release;
  // Each run reads the inputs anew, so it orders after their producers
  // anew (for a run still going, strata refuses the start after this,
  // which did no harm).
  if (persistent_) order_after_producers(*arrays_.views, arrays_.stream);
  comm_->locked([&] { request_.start(); });
}

bool PyRequest::active() {
  py::gil_scoped_release release;  // the lock may be held by a call in another thread
  return comm_->locked([&] { return request_.active(); });
}

void bind_request(py::module_& m) {
  py::class_<PyRequest>(m, "Request", R"doc(
A collective started by one of strata.Communicator's *_async methods, or
bound by one of its *_init methods (persistent: start() runs it again and
again on the same arrays). Not constructed directly.

Requests of one communicator complete in the order they were started, and
every rank must start the same calls in the same order. Until the request
completes (test() returned True, wait() returned or raised) its arrays are
strata's: do not read its outputs or write its inputs. The request keeps
them (and the communicator) alive meanwhile; a persistent request keeps
them for its whole life. A request dropped before it completed is
completed first (there is no cancel; its error, if any, is logged).
test() and wait() raise what the blocking call raises (ValueError for
this rank's invalid arguments, strata.Mismatch, strata.DeadlineExceeded,
...), once. Both release the GIL.)doc")
      .def("test", &PyRequest::test, R"doc(
True once the run is complete (False while it goes on); raises its error
instead, once. Without a progress thread it runs the requests started
before this one and this one, waiting for the other ranks as wait() does.
True at once for a completed request.)doc")
      .def("wait", &PyRequest::wait, R"doc(
Returns when the run is complete: what the blocking method returns (the
array holding the result; batch_all_reduce_async: the list). Raises the
run's error, once; returns at once for a completed request.)doc")
      .def("start", &PyRequest::start, R"doc(
Persistent requests only: runs the bound call again, reading the inputs
anew. ValueError for a request not made by an *_init method, one still
running (wait for it first), or one whose communicator was closed.)doc")
      .def_property_readonly("active", &PyRequest::active,
                             "True from a start until test() or wait() reported the run complete.")
      .def_property_readonly("persistent", &PyRequest::persistent, "True for a request made by an *_init method.")
      .def("__repr__", [](PyRequest& self) {
        return fmt::format("<strata.Request {}{}>", self.name(), self.active() ? ", active" : "");
      });
}

}  // namespace strata_py
