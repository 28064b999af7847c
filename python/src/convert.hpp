// Python arguments to strata's C++ vocabulary: reduce ops, implementations,
// collectives, CommunicationOptions and all_reduce_spec in TensorFlow's tuple
// form. Each throws strata::InvalidArgument (Python ValueError) naming the
// argument for a bad value, and py::type_error for a value of the wrong type.
#pragma once

#include <pybind11/pybind11.h>

#include <string>

#include "strata/options.hpp"
#include "strata/types.hpp"

namespace strata_py {

namespace py = pybind11;

// "sum", "mean", "min", "max", "prod" (any case), a strata.ReduceOp, or any
// enum whose .value is such a name (tf.distribute.ReduceOp.SUM).
strata::ReduceOp to_reduce_op(py::handle value, const char* field);

// "auto" (or "automatic"), "ring", "nccl", any case, or an enum whose .value
// is one (tf.distribute.experimental.CommunicationImplementation.RING).
strata::Implementation to_implementation(py::handle value, const char* field);

// "auto" for Implementation::automatic, else strata's own name.
std::string implementation_name(strata::Implementation implementation);

// "all_reduce", "reduce", "broadcast", "reduce_scatter" or "all_gather".
strata::Collective to_collective(py::handle value, const char* field);

// "host" or "cuda".
strata::Memory to_memory(py::handle value, const char* field);

// None (defaults) or a strata.CommunicationOptions.
strata::CommunicationOptions to_options(py::handle value, const char* field);

// The stream= argument as a cudaStream_t (docs/PYTHON.md, "Streams"):
// None -> nullptr (a blocking call); an int is a cudaStream_t value, 0 (the
// null stream: PyTorch's default stream, CuPy's Stream.null) taken as
// cudaStreamLegacy (1), 2 being cudaStreamPerThread; an object's handle
// from __cuda_stream__() (the CUDA stream protocol: (0, handle)), else
// .cuda_stream (torch.cuda.Stream), else .ptr (cupy.cuda.Stream), read as
// an int is. py::type_error for any other type, InvalidArgument for a
// handle below 0 or wider than a pointer, or a malformed __cuda_stream__
// answer; each names `field` and how the handle was reached.
strata::StreamHandle to_stream(py::handle value, const char* field);

// A call's options: its options= (None or a strata.CommunicationOptions)
// with the stream of its stream= argument.
strata::CommunicationOptions call_options(py::handle options, py::handle stream);

// An all_reduce_spec as strata's text: None -> "" (STRATA_SPEC or "auto"),
// a string checked and printed back (strata::AllReduceSpec), TensorFlow's
// tuple form -- one (alg, shards, limit) or a list of them -- converted to
// strata::SpecTuple and printed as "alg#shards:limit:alg#shards" (limits in
// bytes, the last -1 = no limit). The tuples' Python shapes and types are
// checked here, their values (known names, shards >= 1, increasing limits,
// last -1) by strata::AllReduceSpec; both raise InvalidArgument.
std::string spec_text(py::handle spec, const char* field);

}  // namespace strata_py
