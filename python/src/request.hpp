// strata.Request: a strata::Request owned by Python (the *_async and *_init
// methods of strata.Communicator make them), together with everything its
// call uses: the communicator (kept alive, and its lock taken around every
// use of the request), the views of its arrays and references to the array
// objects, held until the request completes (a persistent one: for its
// whole life), and the object wait() returns.
#pragma once

#include <pybind11/pybind11.h>

#include <memory>
#include <string>
#include <vector>

#include "arrays.hpp"
#include "communicator.hpp"
#include "strata/request.hpp"

namespace strata_py {

namespace py = pybind11;

// One call's arrays: the views strata reads and writes through, and, for a
// request (`keep_objects`), references to the Python objects behind them
// (a view alone need not keep its object alive: __cuda_array_interface__),
// and the call's stream (stream=; nullptr for a blocking call), which the
// views' producers are ordered before. Use with the GIL held.
struct CallArrays {
  CallArrays(bool keep_objects, strata::StreamHandle stream) : stream(stream), keep_objects(keep_objects) {}

  // Views `obj` (see ArrayView), keeping a reference to it if asked to.
  const ArrayView& view(py::handle obj, std::string field, Access access) {
    const ArrayView& made = views->emplace_back(obj, std::move(field), access, stream);
    keep(obj);
    return made;
  }
  void keep(py::handle obj) {
    if (keep_objects) objects.push_back(py::reinterpret_borrow<py::object>(obj));
  }

  std::unique_ptr<ArrayViews> views = std::make_unique<ArrayViews>();
  std::vector<py::object> objects;
  strata::StreamHandle stream;
  bool keep_objects;
};

class PyRequest {
 public:
  // `name` is the method that made it ("all_reduce_async"), for repr.
  PyRequest(std::shared_ptr<PyCommunicator> comm, strata::Request request, CallArrays arrays, py::object result,
            std::string name);
  // With the GIL held: completes an unfinished run first (the GIL released
  // meanwhile; its error is logged, as strata::Request's destructor does),
  // then lets the arrays go.
  ~PyRequest();
  PyRequest(const PyRequest&) = delete;
  PyRequest& operator=(const PyRequest&) = delete;

  // strata::Request's test(), wait() and start(), with the GIL released
  // while they run. Once a non-blocking request completed (or raised), its
  // arrays are let go; wait() returns `result` (every time).
  bool test();
  py::object wait();
  void start();
  bool active();
  bool persistent() const { return persistent_; }
  const std::string& name() const { return name_; }

 private:
  // After a run completed: a non-blocking request lets its arrays go.
  void completed();

  std::shared_ptr<PyCommunicator> comm_;
  strata::Request request_;
  bool persistent_ = false;
  CallArrays arrays_;
  py::object result_;
  std::string name_;
};

void bind_request(py::module_& m);

}  // namespace strata_py
