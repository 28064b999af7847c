// TensorFlow-named facades: NcclAllReduce, MultiWorkerAllReduce,
// ReductionToOneDevice over strata::CrossDeviceOps, with TensorFlow's
// argument names (reduce_op, per_replica_value, destinations,
// value_destination_pairs). Results are written into the caller's arrays.
#include "facades.hpp"

#include <fmt/format.h>

#include <utility>
#include <vector>

#include "arrays.hpp"
#include "communicator.hpp"
#include "convert.hpp"
#include "strata/cross_device_ops.hpp"
#include "util/where.hpp"

namespace strata_py {

namespace {

using strata::InvalidArgument;

// A facade and the communicator it references (kept alive with it).
struct PyCrossDeviceOps {
  std::shared_ptr<PyCommunicator> comm;
  std::unique_ptr<strata::CrossDeviceOps> ops;
};
struct PyNcclAllReduce : PyCrossDeviceOps {};
struct PyMultiWorkerAllReduce : PyCrossDeviceOps {};
struct PyReductionToOneDevice : PyCrossDeviceOps {};

template <class Facade, class Make>
Facade make_facade(py::handle comm, Make&& make) {
  Facade facade;
  facade.comm = communicator_of(comm);
  py::gil_scoped_release release;  // the lock may be held by a collective in another thread
  facade.comm->call([&](strata::Communicator& c) { facade.ops = make(c); });  // parses the spec; sends nothing
  return facade;
}

// A per-replica value: one array (one replica) or a list/tuple of arrays
// (one per local replica), viewed into `views`.
// `stream` is the call's (see ArrayView).
strata::PerReplica replicas_of(py::handle value, const std::string& field, ArrayViews& views,
                               strata::StreamHandle stream) {
  strata::PerReplica replicas;
  if (py::isinstance<py::list>(value) || py::isinstance<py::tuple>(value)) {
    std::size_t r = 0;
    for (py::handle replica : value)
      replicas.push_back(
          views.emplace_back(replica, fmt::format("{}[{}]", field, r++), Access::write, stream).tensor());
  } else {
    replicas.push_back(views.emplace_back(value, field, Access::write, stream).tensor());
  }
  return replicas;
}

// None = every rank (an all-reduce); an int = that rank only (a reduce).
strata::Destination destination_of(py::handle destinations, const std::string& field) {
  if (destinations.is_none()) return strata::Destination::all_ranks();
  if (py::isinstance<py::int_>(destinations) && !py::isinstance<py::bool_>(destinations))
    return strata::Destination::rank(destinations.cast<int>());
  throw py::type_error(fmt::format("{} = {}: pass None (every rank) or a rank number", field,
                                   py::repr(destinations).cast<std::string>()));
}

py::object reduce(PyCrossDeviceOps& self, py::handle reduce_op, py::object per_replica_value, py::handle destinations,
                  py::handle options, py::handle stream) {
  const strata::ReduceOp op = to_reduce_op(reduce_op, "reduce_op");
  const strata::CommunicationOptions opts = call_options(options, stream);
  ArrayViews views;
  const strata::PerReplica value = replicas_of(per_replica_value, "per_replica_value", views, opts.stream);
  const strata::Destination destination = destination_of(destinations, "destinations");
  {
    py::gil_scoped_release release;
    order_after_producers(views, opts.stream);
    self.comm->call([&](strata::Communicator&) { self.ops->reduce(op, value, destination, opts); });
  }
  return per_replica_value;
}

py::list batch_reduce(PyCrossDeviceOps& self, py::handle reduce_op, py::handle value_destination_pairs,
                      py::handle options, py::handle stream) {
  if (!py::isinstance<py::list>(value_destination_pairs) && !py::isinstance<py::tuple>(value_destination_pairs))
    throw py::type_error("value_destination_pairs: pass a list of (per_replica_value, destinations) pairs");
  const strata::ReduceOp op = to_reduce_op(reduce_op, "reduce_op");
  const strata::CommunicationOptions opts = call_options(options, stream);
  ArrayViews views;
  std::vector<std::pair<strata::PerReplica, strata::Destination>> pairs;
  py::list values;
  std::size_t i = 0;
  for (py::handle pair : value_destination_pairs) {
    const std::string field = fmt::format("value_destination_pairs[{}]", i++);
    if ((!py::isinstance<py::tuple>(pair) && !py::isinstance<py::list>(pair)) || py::len(pair) != 2)
      throw py::type_error(fmt::format("{}: pass a (per_replica_value, destinations) pair", field));
    const auto seq = py::reinterpret_borrow<py::sequence>(pair);
    pairs.emplace_back(replicas_of(seq[0], field + "[0]", views, opts.stream), destination_of(seq[1], field + "[1]"));
    values.append(seq[0]);
  }
  {
    py::gil_scoped_release release;
    order_after_producers(views, opts.stream);
    self.comm->call([&](strata::Communicator&) { self.ops->batch_reduce(op, pairs, opts); });
  }
  return values;
}

py::object broadcast(PyCrossDeviceOps& self, py::object tensor, py::handle destinations, int source_rank,
                     py::handle options, py::handle stream) {
  const strata::CommunicationOptions opts = call_options(options, stream);
  ArrayViews views;
  const strata::PerReplica value = replicas_of(tensor, "tensor", views, opts.stream);
  const strata::Destination destination = destination_of(destinations, "destinations");
  {
    py::gil_scoped_release release;
    order_after_producers(views, opts.stream);
    self.comm->call([&](strata::Communicator&) { self.ops->broadcast(value, destination, source_rank, opts); });
  }
  return tensor;
}

}  // namespace

void bind_facades(py::module_& m) {
  py::class_<PyCrossDeviceOps>(m, "CrossDeviceOps", R"doc(
Base of the TensorFlow-named facades. A per-replica value is one array, or a
list/tuple of arrays (one per local replica, all the same size and dtype).
destinations: None = every rank (all-reduce), an int = that rank (reduce).
Results are written into the arrays themselves; the methods return them.)doc")
      .def("reduce", &reduce, py::arg("reduce_op"), py::arg("per_replica_value"),
           py::arg("destinations") = py::none(), py::arg("options") = py::none(), py::kw_only(),
           py::arg("stream") = py::none(), R"doc(
Reduces per_replica_value over every replica of every rank into every
replica on the destination rank(s); "mean" divides by ranks x replicas.
Returns per_replica_value. Raises as Communicator.all_reduce. stream: as
for Communicator.all_reduce (None: blocking; a CUDA stream:
stream-ordered).)doc")
      .def("batch_reduce", &batch_reduce, py::arg("reduce_op"), py::arg("value_destination_pairs"),
           py::arg("options") = py::none(), py::kw_only(), py::arg("stream") = py::none(), R"doc(
Several reductions in one call: values with the same destination are packed
together. Returns the list of values, in input order. stream: as reduce.)doc")
      .def("broadcast", &broadcast, py::arg("tensor"), py::arg("destinations") = py::none(),
           py::arg("source_rank") = 0, py::arg("options") = py::none(), py::kw_only(),
           py::arg("stream") = py::none(), R"doc(
Copies replica 0 of `tensor` on source_rank into every replica on the
destination rank(s); collective over all ranks, other ranks keep their
arrays. Returns tensor.)doc")
      .def_property_readonly(
          "all_reduce_spec", [](const PyCrossDeviceOps& self) { return self.ops->all_reduce_spec(); },
          "The spec this facade runs, as strata's text.")
      .def_property_readonly(
          "communicator", [](const PyCrossDeviceOps& self) { return self.comm; },
          "The strata.Communicator it runs on (a new one when it was given an mpi4py communicator).");

  py::class_<PyNcclAllReduce, PyCrossDeviceOps>(m, "NcclAllReduce", R"doc(
NcclAllReduce(comm, num_packs=1): NCCL all-reduce of CUDA arrays, packed into
num_packs packs per dtype. comm: a strata.Communicator or an mpi4py
communicator (then wrapped in a new strata.Communicator, collectively). Host
arrays run strata's default host algorithms. ValueError for num_packs < 0.)doc")
      .def(py::init([](py::handle comm, int num_packs) {
             return make_facade<PyNcclAllReduce>(
                 comm, [&](strata::Communicator& c) { return std::make_unique<strata::NcclAllReduce>(c, num_packs); });
           }),
           py::arg("comm"), py::arg("num_packs") = 1);

  py::class_<PyMultiWorkerAllReduce, PyCrossDeviceOps>(m, "MultiWorkerAllReduce", R"doc(
MultiWorkerAllReduce(comm, num_gpus_per_worker=1,
all_reduce_spec=("pscpu/pscpu", 2, -1), num_packs=0,
agg_small_grads_max_bytes=0, agg_small_grads_max_group=10): all-reduce
following all_reduce_spec (a string such as "nccl/xring#2:64k:pscpu/pscpu#2",
or TensorFlow's tuple form: one (alg, shards, limit) or a list of them,
limits in bytes, the last -1), num_gpus_per_worker replicas per rank, packed
per num_packs or small-gradient aggregation. ValueError for a bad spec or
option.)doc")
      .def(py::init([](py::handle comm, int num_gpus_per_worker, py::handle all_reduce_spec, int num_packs,
                       long long agg_small_grads_max_bytes, int agg_small_grads_max_group) {
             const std::string spec = spec_text(all_reduce_spec, "all_reduce_spec");
             if (spec.empty())
               throw InvalidArgument(
                   strata::util::located("all_reduce_spec = None: MultiWorkerAllReduce needs a spec"));
             return make_facade<PyMultiWorkerAllReduce>(comm, [&](strata::Communicator& c) {
               return std::make_unique<strata::MultiWorkerAllReduce>(c, num_gpus_per_worker, spec, num_packs,
                                                                     agg_small_grads_max_bytes,
                                                                     agg_small_grads_max_group);
             });
           }),
           py::arg("comm"), py::arg("num_gpus_per_worker") = 1,
           py::arg("all_reduce_spec") = py::make_tuple("pscpu/pscpu", 2, -1), py::arg("num_packs") = 0,
           py::arg("agg_small_grads_max_bytes") = 0, py::arg("agg_small_grads_max_group") = 10);

  py::class_<PyReductionToOneDevice, PyCrossDeviceOps>(m, "ReductionToOneDevice", R"doc(
ReductionToOneDevice(comm): reduce everything to one rank, then broadcast (a
binomial tree both ways): the simple, always-available fallback.)doc")
      .def(py::init([](py::handle comm) {
             return make_facade<PyReductionToOneDevice>(
                 comm, [](strata::Communicator& c) { return std::make_unique<strata::ReductionToOneDevice>(c); });
           }),
           py::arg("comm"));
}

}  // namespace strata_py
