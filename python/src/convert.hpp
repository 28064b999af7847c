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

// "all_reduce", "reduce" or "broadcast".
strata::Collective to_collective(py::handle value, const char* field);

// None (defaults) or a strata.CommunicationOptions.
strata::CommunicationOptions to_options(py::handle value, const char* field);

// An all_reduce_spec as strata's text: None -> "" (STRATA_SPEC or "auto"),
// a string as it is, TensorFlow's tuple form -- one (alg, shards, limit) or a
// list of them -- as "alg#shards:limit:alg#shards" with limits in bytes and
// the last limit -1 (no limit). Checks the tuples' shape and types here;
// strata's parser checks the rest (known algorithms, increasing limits).
std::string spec_text(py::handle spec, const char* field);

}  // namespace strata_py
