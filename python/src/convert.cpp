#include "convert.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <limits>
#include <vector>

#include "strata/errors.hpp"
#include "strata/spec.hpp"
#include "util/where.hpp"

namespace strata_py {

namespace {

using strata::InvalidArgument;

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}

std::string repr_of(py::handle value) { return py::repr(value).cast<std::string>(); }

// The name a string or a string-valued enum (TensorFlow's) carries, lower
// case; empty when `value` is neither.
std::string name_of(py::handle value) {
  if (py::isinstance<py::str>(value)) return lower(value.cast<std::string>());
  if (py::hasattr(value, "value")) {
    py::object inner = value.attr("value");
    if (py::isinstance<py::str>(inner)) return lower(inner.cast<std::string>());
  }
  return {};
}

bool is_int(py::handle value) { return py::isinstance<py::int_>(value) && !py::isinstance<py::bool_>(value); }

}  // namespace

strata::ReduceOp to_reduce_op(py::handle value, const char* field) {
  if (py::isinstance<strata::ReduceOp>(value)) return value.cast<strata::ReduceOp>();
  const std::string name = name_of(value);
  if (name.empty())
    throw py::type_error(fmt::format("{} = {}: pass a name (\"sum\", \"mean\", \"min\", \"max\", \"prod\") or a "
                                     "strata.ReduceOp",
                                     field, repr_of(value)));
  return strata::parse_reduce_op(name, field);  // InvalidArgument naming the field for unknown names
}

strata::Implementation to_implementation(py::handle value, const char* field) {
  const std::string name = name_of(value);
  if (name == "auto" || name == "automatic") return strata::Implementation::automatic;
  if (name == "ring") return strata::Implementation::ring;
  if (name == "nccl") return strata::Implementation::nccl;
  if (name.empty() && !py::isinstance<py::str>(value))
    throw py::type_error(fmt::format("{} = {}: pass \"auto\", \"ring\" or \"nccl\"", field, repr_of(value)));
  throw InvalidArgument(
      strata::util::located(fmt::format("{} = {} is not one of \"auto\", \"ring\", \"nccl\"", field, repr_of(value))));
}

std::string implementation_name(strata::Implementation implementation) {
  return implementation == strata::Implementation::automatic ? "auto" : std::string(strata::to_string(implementation));
}

strata::Collective to_collective(py::handle value, const char* field) {
  const std::string name = name_of(value);
  if (name == "all_reduce") return strata::Collective::all_reduce;
  if (name == "reduce") return strata::Collective::reduce;
  if (name == "broadcast") return strata::Collective::broadcast;
  if (name == "reduce_scatter") return strata::Collective::reduce_scatter;
  if (name == "all_gather") return strata::Collective::all_gather;
  throw InvalidArgument(strata::util::located(
      fmt::format("{} = {} is not one of \"all_reduce\", \"reduce\", \"broadcast\", \"reduce_scatter\", "
                  "\"all_gather\"",
                  field, repr_of(value))));
}

strata::Memory to_memory(py::handle value, const char* field) {
  const std::string name = name_of(value);
  if (name == "host") return strata::Memory::host;
  if (name == "cuda") return strata::Memory::cuda;
  throw InvalidArgument(
      strata::util::located(fmt::format("{} = {} is not one of \"host\", \"cuda\"", field, repr_of(value))));
}

strata::CommunicationOptions to_options(py::handle value, const char* field) {
  if (value.is_none()) return {};
  if (!py::isinstance<strata::CommunicationOptions>(value))
    throw py::type_error(
        fmt::format("{} = {}: pass None or a strata.CommunicationOptions", field, repr_of(value)));
  return value.cast<strata::CommunicationOptions>();
}

namespace {

// cudaStreamLegacy's value (cuda_runtime_api.h: ((cudaStream_t)0x1)), which
// the null stream of a Python library means; spelled out so that host-only
// builds need no CUDA header.
constexpr std::uintptr_t kLegacyStream = 1;

// `handle`, reached as `where`, as a stream: an int in [0, 2^64), the null
// stream 0 meaning cudaStreamLegacy.
strata::StreamHandle stream_handle(py::handle handle, const std::string& where) {
  if (!is_int(handle))
    throw InvalidArgument(strata::util::located(
        fmt::format("{} = {} is not an int; a stream's handle is its cudaStream_t as an int", where,
                    repr_of(handle))));
  static_assert(sizeof(std::uintptr_t) == sizeof(unsigned long long), "a pointer is 64 bits here");
  const py::int_ zero(0);
  if (PyObject_RichCompareBool(handle.ptr(), zero.ptr(), Py_LT) == 1)
    throw InvalidArgument(strata::util::located(
        fmt::format("{} = {} is negative; a cudaStream_t is an address (0 = the legacy default stream)", where,
                    repr_of(handle))));
  const unsigned long long bits = PyLong_AsUnsignedLongLong(handle.ptr());
  if (PyErr_Occurred()) {
    PyErr_Clear();
    throw InvalidArgument(strata::util::located(
        fmt::format("{} = {} does not fit a pointer; pass a cudaStream_t's value", where, repr_of(handle))));
  }
  return reinterpret_cast<strata::StreamHandle>(bits == 0 ? kLegacyStream : static_cast<std::uintptr_t>(bits));
}

}  // namespace

strata::StreamHandle to_stream(py::handle value, const char* field) {
  if (value.is_none()) return nullptr;
  if (is_int(value)) return stream_handle(value, field);
  if (py::hasattr(value, "__cuda_stream__")) {
    const std::string where = fmt::format("{}.__cuda_stream__()", field);
    const py::object protocol = value.attr("__cuda_stream__");
    if (!PyCallable_Check(protocol.ptr()))
      throw InvalidArgument(strata::util::located(
          fmt::format("{}.__cuda_stream__ = {} is not a method; in the CUDA stream protocol it returns "
                      "(version, handle)",
                      field, repr_of(protocol))));
    const py::object answer = protocol();
    if (!py::isinstance<py::tuple>(answer) || py::len(answer) != 2)
      throw InvalidArgument(strata::util::located(
          fmt::format("{} returned {}, not a (version, handle) tuple", where, repr_of(answer))));
    const auto pair = py::reinterpret_borrow<py::tuple>(answer);
    const py::object version = pair[0], handle = pair[1];
    if (!is_int(version) || PyObject_RichCompareBool(version.ptr(), py::int_(0).ptr(), Py_EQ) != 1)
      throw InvalidArgument(strata::util::located(fmt::format(
          "{} returned version {}; strata reads version 0 of the CUDA stream protocol", where, repr_of(version))));
    return stream_handle(handle, where + "[1]");
  }
  if (py::hasattr(value, "cuda_stream"))
    return stream_handle(value.attr("cuda_stream"), fmt::format("{}.cuda_stream", field));
  if (py::hasattr(value, "ptr")) return stream_handle(value.attr("ptr"), fmt::format("{}.ptr", field));
  throw py::type_error(fmt::format(
      "{} = {}: pass None (a blocking call), a cudaStream_t as an int, or a stream object with __cuda_stream__ "
      "(the CUDA stream protocol), .cuda_stream (torch.cuda.Stream) or .ptr (cupy.cuda.Stream)",
      field, repr_of(value)));
}

strata::CommunicationOptions call_options(py::handle options, py::handle stream) {
  strata::CommunicationOptions opts = to_options(options, "options");
  opts.stream = to_stream(stream, "stream");
  return opts;
}

std::string spec_text(py::handle spec, const char* field) {
  if (spec.is_none()) return {};
  if (py::isinstance<py::str>(spec)) return strata::AllReduceSpec(spec.cast<std::string>()).to_string();
  if (!py::isinstance<py::tuple>(spec) && !py::isinstance<py::list>(spec))
    throw py::type_error(fmt::format("{} = {}: pass a string (\"pscpu/pscpu#2\"), a tuple (alg, shards, limit) or a "
                                     "list of such tuples",
                                     field, repr_of(spec)));
  const auto outer = py::reinterpret_borrow<py::sequence>(spec);
  // One tuple (its first item is the algorithm's name) or a list of them.
  std::vector<py::object> entries;
  if (py::len(outer) > 0 && py::isinstance<py::str>(outer[0])) {
    entries.push_back(py::reinterpret_borrow<py::object>(spec));
  } else {
    for (py::handle entry : outer) entries.push_back(py::reinterpret_borrow<py::object>(entry));
  }
  // Only the Python shapes and types are checked here; strata::AllReduceSpec
  // checks the values (known names, shards, increasing limits, last -1).
  std::vector<strata::SpecTuple> tuples;
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const py::object& entry = entries[i];
    const std::string where = fmt::format("{}[{}] = {}", field, i, repr_of(entry));
    if ((!py::isinstance<py::tuple>(entry) && !py::isinstance<py::list>(entry)) || py::len(entry) != 3)
      throw InvalidArgument(strata::util::located(fmt::format("{} is not a tuple (alg, shards, limit)", where)));
    const auto tuple = py::reinterpret_borrow<py::sequence>(entry);
    const py::object alg = tuple[0], shards = tuple[1], limit = tuple[2];
    if (!py::isinstance<py::str>(alg))
      throw InvalidArgument(strata::util::located(fmt::format("{}: alg must be a string such as \"xring\"", where)));
    if (!is_int(shards) || shards.cast<long long>() < std::numeric_limits<int>::min() ||
        shards.cast<long long>() > std::numeric_limits<int>::max())
      throw InvalidArgument(strata::util::located(fmt::format("{}: shards must be an int (>= 1)", where)));
    if (!is_int(limit))
      throw InvalidArgument(
          strata::util::located(fmt::format("{}: limit must be an int (bytes; -1 = no limit)", where)));
    tuples.push_back({alg.cast<std::string>(), static_cast<int>(shards.cast<long long>()), limit.cast<long long>()});
  }
  return strata::AllReduceSpec(std::move(tuples)).to_string();
}

}  // namespace strata_py
