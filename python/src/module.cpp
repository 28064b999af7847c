// strata._strata: the compiled half of the `strata` Python package
// (docs/PYTHON.md). strata/__init__.py re-exports it with the pure-Python
// error classes of strata/errors.py.
#include <pybind11/pybind11.h>
#include <fmt/format.h>

#include "communicator.hpp"
#include "convert.hpp"
#include "cuda_support.hpp"
#include "errors.hpp"
#include "facades.hpp"
#include "request.hpp"
#include "strata/options.hpp"
#include "strata/types.hpp"
#include "strata/version.hpp"

namespace py = pybind11;

namespace {

void bind_types(py::module_& m) {
  py::enum_<strata::ReduceOp>(m, "ReduceOp", R"doc(
Reduction operators, named like tf.distribute.ReduceOp (SUM, MEAN) plus MIN,
MAX, PROD. Wherever an op is taken, its lower-case name ("sum") or
TensorFlow's own ReduceOp works too.)doc")
      .value("SUM", strata::ReduceOp::sum)
      .value("MEAN", strata::ReduceOp::mean)
      .value("MIN", strata::ReduceOp::min)
      .value("MAX", strata::ReduceOp::max)
      .value("PROD", strata::ReduceOp::prod);

  py::class_<strata::CommunicationOptions>(m, "CommunicationOptions", R"doc(
CommunicationOptions(bytes_per_pack=0, timeout_seconds=0, implementation="auto"):
per-call options, as TensorFlow's. bytes_per_pack: pack size of batched calls
(0 = automatic). timeout_seconds: bound on the whole call (0 or None = none);
on expiry the call raises strata.DeadlineExceeded naming the ranks it waited
for, and the communicator is broken. implementation: "auto" (follow the
all_reduce_spec), "ring" (xring) or "nccl" (CUDA arrays only). Values are
checked at each call (ValueError before anything is sent).)doc")
      .def(py::init([](long long bytes_per_pack, py::handle timeout_seconds, py::handle implementation) {
             strata::CommunicationOptions options;
             options.bytes_per_pack = bytes_per_pack;
             options.timeout_seconds = timeout_seconds.is_none() ? 0.0 : timeout_seconds.cast<double>();
             options.implementation = strata_py::to_implementation(implementation, "implementation");
             return options;
           }),
           py::arg("bytes_per_pack") = 0, py::arg("timeout_seconds") = 0.0, py::arg("implementation") = "auto")
      .def_readwrite("bytes_per_pack", &strata::CommunicationOptions::bytes_per_pack)
      .def_readwrite("timeout_seconds", &strata::CommunicationOptions::timeout_seconds)
      .def_property(
          "implementation",
          [](const strata::CommunicationOptions& o) { return strata_py::implementation_name(o.implementation); },
          [](strata::CommunicationOptions& o, py::handle value) {
            o.implementation = strata_py::to_implementation(value, "implementation");
          })
      .def("__repr__", [](const strata::CommunicationOptions& o) {
        return fmt::format("strata.CommunicationOptions(bytes_per_pack={}, timeout_seconds={}, implementation='{}')",
                           o.bytes_per_pack, o.timeout_seconds, strata_py::implementation_name(o.implementation));
      });
  m.attr("CollectiveHints") = m.attr("CommunicationOptions");  // TensorFlow's older name

  m.def(
      "all_reduce_spec_text", [](py::handle spec) { return strata_py::spec_text(spec, "all_reduce_spec"); },
      py::arg("spec"), R"doc(
An all_reduce_spec in strata's text form: a string as it is, TensorFlow's
tuple form converted (("xring", 2, -1) -> "xring#2";
[("tree", 1, 4096), ("xring", 2, -1)] -> "tree:4096:xring#2"), None -> ""
(the default). ValueError for malformed tuples (not 3 items, alg not a name,
shards < 1, a limit that is not an int, last limit not -1).)doc");
}

}  // namespace

PYBIND11_MODULE(_strata, m) {
  m.doc() = "strata's compiled core; import strata instead.";
  strata_py::register_errors(m);
  bind_types(m);
  strata_py::bind_communicator(m);
  strata_py::bind_request(m);
  strata_py::bind_facades(m);
  m.attr("__version__") = strata::version;
  m.attr("cuda_built") = strata::have_cuda;  // the library's GPU backend (the module follows it)
  m.def("_cuda_device_count", &strata_py::cuda::device_count,
        "CUDA devices this process sees (0 without a GPU backend, a driver or the CUDA runtime); loads the CUDA "
        "runtime on first call; for tests.");
  m.def("_cuda_runtime_problem", &strata_py::cuda::runtime_problem,
        "'' while the CUDA runtime loaded or was never needed; else why it could not be loaded, naming the library "
        "(the module loads it on the first CUDA array); for tests.");
}
