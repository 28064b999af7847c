#include "communicator.hpp"

#include <fmt/format.h>

#include <vector>

#include "arrays.hpp"
#include "convert.hpp"
#include "util/where.hpp"

namespace strata_py {

PyCommunicator::PyCommunicator(MPI_Comm comm, strata::Config config)
    : comm_(std::make_unique<strata::Communicator>(comm, std::move(config))),
      rank_(comm_->rank()),
      size_(comm_->size()) {}

void PyCommunicator::close() {
  std::unique_ptr<strata::Communicator> doomed;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    doomed = std::move(comm_);
  }
}

bool PyCommunicator::closed() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return !comm_;
}

std::shared_ptr<PyCommunicator> communicator_of(py::handle comm) {
  if (py::isinstance<PyCommunicator>(comm)) return comm.cast<std::shared_ptr<PyCommunicator>>();
  const MPI_Comm mpi = mpi_comm_of(comm);
  py::gil_scoped_release release;
  return std::make_shared<PyCommunicator>(mpi, strata::Config{});
}

namespace {

using strata::InvalidArgument;

// By member, not position, so that a reordered or grown struct cannot
// silently swap the values.
strata::PackingOptions packing_options(int num_packs, long long agg_small_grads_max_bytes,
                                       int agg_small_grads_max_group) {
  strata::PackingOptions packing;
  packing.num_packs = num_packs;
  packing.agg_small_grads_max_bytes = agg_small_grads_max_bytes;
  packing.agg_small_grads_max_group = agg_small_grads_max_group;
  return packing;
}

py::object all_reduce(PyCommunicator& self, py::object x, py::object out, py::handle op, py::handle options) {
  const strata::ReduceOp reduce_op = to_reduce_op(op, "op");
  const strata::CommunicationOptions opts = to_options(options, "options");
  const bool in_place = out.is_none() || out.is(x);
  ArrayViews views;
  const ArrayView& in = views.emplace_back(x, "x", in_place ? Access::write : Access::read);
  const ArrayView& result = in_place ? in : views.emplace_back(out, "out", Access::write);
  {
    py::gil_scoped_release release;
    wait_for_producers(views);
    self.call([&](strata::Communicator& c) { c.all_reduce(in.tensor(), result.tensor(), reduce_op, opts); });
  }
  return in_place ? x : out;
}

py::object reduce(PyCommunicator& self, py::object x, int root, py::object out, py::handle op, py::handle options) {
  const strata::ReduceOp reduce_op = to_reduce_op(op, "op");
  const strata::CommunicationOptions opts = to_options(options, "options");
  const bool in_place = out.is_none() || out.is(x);
  ArrayViews views;
  const ArrayView& in = views.emplace_back(x, "x", in_place ? Access::write : Access::read);
  const ArrayView& result = in_place ? in : views.emplace_back(out, "out", Access::write);
  {
    py::gil_scoped_release release;
    wait_for_producers(views);
    self.call([&](strata::Communicator& c) { c.reduce(in.tensor(), result.tensor(), reduce_op, root, opts); });
  }
  return in_place ? x : out;
}

py::object broadcast(PyCommunicator& self, py::object x, int root, py::handle options) {
  const strata::CommunicationOptions opts = to_options(options, "options");
  ArrayViews views;
  const ArrayView& buffer = views.emplace_back(x, "x", Access::write);
  {
    py::gil_scoped_release release;
    wait_for_producers(views);
    self.call([&](strata::Communicator& c) { c.broadcast(buffer.tensor(), root, opts); });
  }
  return x;
}

// numpy's name for a strata dtype; bf16 has none (numpy has no bfloat16).
const char* numpy_name(strata::DataType dtype) {
  switch (dtype) {
    case strata::DataType::f32: return "float32";
    case strata::DataType::f64: return "float64";
    case strata::DataType::f16: return "float16";
    case strata::DataType::i8: return "int8";
    case strata::DataType::u8: return "uint8";
    case strata::DataType::i32: return "int32";
    case strata::DataType::u32: return "uint32";
    case strata::DataType::i64: return "int64";
    case strata::DataType::u64: return "uint64";
    case strata::DataType::bf16: break;
  }
  return nullptr;
}

// The result array of a call whose result is not the size of `x` and that
// was given no `out` (reduce_scatter, all_gather): a new numpy array of
// `shape` in x's dtype. These two calls are the only ones that allocate: in
// place into x cannot hold their result. numpy is imported here, so that
// the module needs it only for such calls. A CUDA array has no allocator
// the module could know, and a bfloat16 tensor other than a numpy one no
// numpy dtype: both must pass `out`.
py::object new_result(py::handle x, const ArrayView& in, const py::tuple& shape, const char* function) {
  const strata::Tensor& t = in.tensor();
  if (t.memory != strata::Memory::host)
    throw InvalidArgument(strata::util::located(
        fmt::format("{}: x is a CUDA array and out is None, but the module allocates results only in host memory "
                    "(numpy); pass out= (a CUDA array of the result's size)",
                    function)));
  py::object dtype;
  if (const char* name = numpy_name(t.dtype)) {
    dtype = py::str(name);
  } else if (is_numpy_bfloat16(x)) {
    dtype = x.attr("dtype");
  } else {
    throw InvalidArgument(strata::util::located(
        fmt::format("{}: x is a bfloat16 tensor without a numpy dtype and out is None; pass out= (a bfloat16 "
                    "array of the result's size)",
                    function)));
  }
  return py::module_::import("numpy").attr("empty")(shape, dtype);
}

py::object reduce_scatter(PyCommunicator& self, py::object x, py::object out, py::handle op, py::handle options) {
  const strata::ReduceOp reduce_op = to_reduce_op(op, "op");
  const strata::CommunicationOptions opts = to_options(options, "options");
  ArrayViews views;
  const ArrayView& in = views.emplace_back(x, "x", Access::read);
  // x's size // ranks: when x's size is no multiple of the ranks, strata
  // refuses the call (on every rank, naming the counts), as for any `out`.
  if (out.is_none())
    out = new_result(x, in, py::make_tuple(in.tensor().count / static_cast<std::size_t>(self.size())),
                     "reduce_scatter");
  const ArrayView& result = views.emplace_back(out, "out", Access::write);
  {
    py::gil_scoped_release release;
    wait_for_producers(views);
    self.call([&](strata::Communicator& c) { c.reduce_scatter(in.tensor(), result.tensor(), reduce_op, opts); });
  }
  return out;
}

py::object all_gather(PyCommunicator& self, py::object x, py::object out, py::handle options) {
  const strata::CommunicationOptions opts = to_options(options, "options");
  ArrayViews views;
  const ArrayView& in = views.emplace_back(x, "x", Access::read);
  if (out.is_none()) {
    // (size, *x.shape): out[r] is rank r's x, and the elements lie as the
    // flat blocks do.
    py::list shape;
    shape.append(self.size());
    for (std::size_t extent : in.shape()) shape.append(extent);
    out = new_result(x, in, py::tuple(shape), "all_gather");
  }
  const ArrayView& result = views.emplace_back(out, "out", Access::write);
  {
    py::gil_scoped_release release;
    wait_for_producers(views);
    self.call([&](strata::Communicator& c) { c.all_gather(in.tensor(), result.tensor(), opts); });
  }
  return out;
}

// A batch argument: a list or tuple of arrays (TypeError otherwise).
void check_array_list(py::handle arrays) {
  if (!py::isinstance<py::list>(arrays) && !py::isinstance<py::tuple>(arrays))
    throw py::type_error(fmt::format("arrays is a {}: pass a list (or tuple) of arrays",
                                     Py_TYPE(arrays.ptr())->tp_name));
}

// The tensors of a batch's arrays, viewed through `views` ("arrays[i]" in errors).
std::vector<strata::Tensor> tensors_of(py::handle arrays, ArrayViews& views, Access access) {
  std::vector<strata::Tensor> tensors;
  std::size_t i = 0;
  for (py::handle array : arrays)
    tensors.push_back(views.emplace_back(array, fmt::format("arrays[{}]", i++), access).tensor());
  return tensors;
}

py::object batch_all_reduce(PyCommunicator& self, py::object arrays, py::handle op, py::handle options, int num_packs,
                            long long agg_small_grads_max_bytes, int agg_small_grads_max_group) {
  check_array_list(arrays);
  const strata::ReduceOp reduce_op = to_reduce_op(op, "op");
  const strata::CommunicationOptions opts = to_options(options, "options");
  const strata::PackingOptions packing = packing_options(num_packs, agg_small_grads_max_bytes, agg_small_grads_max_group);
  ArrayViews views;
  std::vector<strata::Tensor> tensors = tensors_of(arrays, views, Access::write);
  {
    py::gil_scoped_release release;
    wait_for_producers(views);
    self.call([&](strata::Communicator& c) { c.batch_all_reduce(tensors, reduce_op, packing, opts); });
  }
  return arrays;
}

std::string algorithm_for(PyCommunicator& self, long long nbytes, py::handle collective, py::handle memory) {
  if (nbytes < 0) throw InvalidArgument(strata::util::located(fmt::format("nbytes = {} must be >= 0", nbytes)));
  const strata::Collective which = to_collective(collective, "collective");
  const strata::Memory where = to_memory(memory, "memory");
  py::gil_scoped_release release;  // the lock may be held by a collective in another thread
  return self.call(
      [&](strata::Communicator& c) { return c.algorithm_for(static_cast<std::size_t>(nbytes), which, where); });
}

py::list plan_for(PyCommunicator& self, py::handle arrays, py::handle options, int num_packs,
                  long long agg_small_grads_max_bytes, int agg_small_grads_max_group) {
  check_array_list(arrays);
  const strata::CommunicationOptions opts = to_options(options, "options");
  const strata::PackingOptions packing = packing_options(num_packs, agg_small_grads_max_bytes, agg_small_grads_max_group);
  ArrayViews views;
  const std::vector<strata::Tensor> tensors = tensors_of(arrays, views, Access::read);
  strata::Plan plan;
  {
    py::gil_scoped_release release;
    plan = self.call([&](strata::Communicator& c) { return c.plan_for(tensors, packing, opts); });
  }
  py::list packs;
  for (const strata::PlannedPack& pack : plan.packs) {
    py::list members;
    for (std::size_t index : pack.tensors) members.append(index);
    py::dict entry;
    entry["dtype"] = std::string(strata::to_string(pack.dtype));
    entry["count"] = pack.count;
    entry["bytes"] = pack.bytes;
    entry["arrays"] = members;
    entry["algorithm"] = pack.algorithm;
    packs.append(entry);
  }
  return packs;
}

}  // namespace

void bind_communicator(py::module_& m) {
  py::class_<PyCommunicator, std::shared_ptr<PyCommunicator>>(m, "Communicator", R"doc(
Collectives over an mpi4py communicator.

Communicator(comm, all_reduce_spec=None, chunk_bytes=0, check_calls=True) is collective over
`comm` (every rank must construct it) and duplicates it, so strata's traffic
never mixes with the program's. all_reduce_spec: None (STRATA_SPEC, else
"auto"), a string such as "pscpu/pscpu#2" or "tree:64k:xring", or TensorFlow's
tuple form ("xring", 2, -1) / [("tree", 1, 4096), ("xring", 2, -1)] (limits in
bytes, the last -1). chunk_bytes: pipeline chunk of the ring algorithms
(0 = default, else 4096 .. 1 GiB). check_calls: before any data moves, every
rank checks that all make the same call (strata.Mismatch on every rank
otherwise; STRATA_CHECK=off also turns it off). Raises ValueError
(strata.InvalidArgument) for a bad spec or chunk size.
Close it (close(), or a `with` block) before MPI is finalized if you keep it
in a long-lived structure.)doc")
      .def(py::init([](py::handle comm, py::handle all_reduce_spec, long long chunk_bytes, bool check_calls) {
             if (chunk_bytes < 0)
               throw InvalidArgument(
                   strata::util::located(fmt::format("chunk_bytes = {} must be >= 0 (0 = default)", chunk_bytes)));
             const MPI_Comm mpi = mpi_comm_of(comm);
             strata::Config config;  // by member, not position: Config may grow fields
             config.all_reduce_spec = spec_text(all_reduce_spec, "all_reduce_spec");
             config.chunk_bytes = static_cast<std::size_t>(chunk_bytes);
             config.check_calls = check_calls;
             py::gil_scoped_release release;
             return std::make_shared<PyCommunicator>(mpi, std::move(config));
           }),
           py::arg("comm"), py::arg("all_reduce_spec") = py::none(), py::arg("chunk_bytes") = 0,
           py::arg("check_calls") = true)
      .def_property_readonly("rank", &PyCommunicator::rank, "This process's rank in the communicator.")
      .def_property_readonly("size", &PyCommunicator::size, "The number of ranks.")
      .def_property_readonly(
          "broken",
          [](PyCommunicator& self) {
            py::gil_scoped_release release;
            return self.call([](strata::Communicator& c) { return c.broken(); });
          },
          "True once a timeout or a peer failure broke the communicator; every later call raises "
          "strata.PeerFailure.")
      .def_property_readonly(
          "closed",
          [](PyCommunicator& self) {
            py::gil_scoped_release release;  // a call in another thread holds the lock closed() takes
            return self.closed();
          },
          "True after close().")
      .def("all_reduce", &all_reduce, py::arg("x"), py::arg("out") = py::none(), py::arg("op") = "sum",
           py::arg("options") = py::none(), R"doc(
Every rank's `out` receives op over every rank's `x`; in place (into `x`)
when out is None or out is x. Returns the array holding the result.
All ranks pass the same size, dtype and op. Identical bits on every rank;
float16/bfloat16 reduced in float32; "mean" keeps the dtype (integers
truncate). Arrays must be C-contiguous (ValueError otherwise); numpy arrays
and buffers are host memory, __cuda_array_interface__ / DLPack CUDA arrays
CUDA memory. Raises ValueError (strata.InvalidArgument, before anything is
sent), strata.DeadlineExceeded (a TimeoutError; options.timeout_seconds),
strata.PeerFailure, strata.Unavailable (CUDA arrays without a GPU backend),
strata.BackendError. Runs without the GIL.)doc")
      .def("reduce", &reduce, py::arg("x"), py::arg("root"), py::arg("out") = py::none(), py::arg("op") = "sum",
           py::arg("options") = py::none(), R"doc(
Like all_reduce, but only rank `root` receives the result (in `out`, or in
`x` when out is None or out is x); other ranks' buffers are not written.
Returns `out` (or `x`) on every rank. ValueError for a root outside
[0, size).)doc")
      .def("broadcast", &broadcast, py::arg("x"), py::arg("root"), py::arg("options") = py::none(), R"doc(
Copies rank `root`'s `x` into every other rank's `x` (same size and dtype
everywhere; writable everywhere). Returns `x`.)doc")
      .def("reduce_scatter", &reduce_scatter, py::arg("x"), py::arg("out") = py::none(), py::arg("op") = "sum",
           py::arg("options") = py::none(), R"doc(
Rank r's result is op over every rank's block r of `x`, where x's elements
(C order, any shape) are `size` blocks of x.size // size elements, block r
the r-th (MPI_Reduce_scatter_block, ncclReduceScatter). The result goes to
`out` (x.size // size elements, any shape), or, when out is None, to a new
1-d numpy array (host arrays only). In place when `out` is a view of this
rank's block of x (x.reshape(-1)[rank * n:(rank + 1) * n]); x is not
written otherwise. Returns the array holding the result. ValueError when
x.size is not size times out's size (with out=None: not a multiple of
size). op, dtypes and errors as all_reduce; "mean" divides by size. Runs
without the GIL.)doc")
      .def("all_gather", &all_gather, py::arg("x"), py::arg("out") = py::none(), py::arg("options") = py::none(),
           R"doc(
Every rank receives every rank's `x`, rank r's at block r of the result
(MPI_Allgather, ncclAllGather): `out` holds size x x.size elements (any
shape; block r is its r-th run of x.size elements in C order), or, when out
is None, a new numpy array of shape (size, *x.shape) is returned (host
arrays only), so that result[r] is rank r's x. In place when `x` is a view
of this rank's block of out (out[rank] of such an array). Returns the array
holding the result; identical bits on every rank. ValueError when out's
size is not size times x.size. Errors as all_reduce. Runs without the
GIL.)doc")
      .def("batch_all_reduce", &batch_all_reduce, py::arg("arrays"), py::arg("op") = "sum",
           py::arg("options") = py::none(), py::arg("num_packs") = 0, py::arg("agg_small_grads_max_bytes") = 0,
           py::arg("agg_small_grads_max_group") = 10, R"doc(
All-reduces each array of the list in place, packed into few transfers:
num_packs > 0 cuts each dtype's arrays into that many packs; else small-
gradient aggregation when agg_small_grads_max_bytes and
agg_small_grads_max_group are > 0; else options.bytes_per_pack (0 =
automatic). Arrays must not overlap. Returns `arrays`. Packed floating-point
results may differ in the last bits from per-array all_reduce (still
identical on every rank).)doc")
      .def("algorithm_for", &algorithm_for, py::arg("nbytes"), py::arg("collective") = "all_reduce",
           py::arg("memory") = "host",
           "The algorithm this communicator's spec runs for one call of `nbytes` bytes (\"pscpu\", \"xring#2\", "
           "\"pscpu/rechd\"); collective is \"all_reduce\", \"reduce\", \"broadcast\", \"reduce_scatter\" or "
           "\"all_gather\" (nbytes: the whole buffer, x of reduce_scatter, out of all_gather), memory \"host\" or "
           "\"cuda\". Local.")
      .def_property_readonly(
          "all_reduce_spec",
          [](PyCommunicator& self) {
            py::gil_scoped_release release;
            return self.call([](strata::Communicator& c) { return c.all_reduce_spec().to_string(); });
          },
          "The spec this communicator runs, as text (all_reduce_spec=, else STRATA_SPEC or STRATA_SPEC_FILE, else "
          "\"auto\").")
      .def(
          "spec_map",
          [](PyCommunicator& self) {
            py::gil_scoped_release release;
            return self.call([](strata::Communicator& c) { return c.spec_map(); });
          },
          "The size -> algorithm map of all-reduce on host memory, one line, as STRATA_DEBUG=INFO prints it. Local.")
      .def("plan_for", &plan_for, py::arg("arrays"), py::arg("options") = py::none(), py::arg("num_packs") = 0,
           py::arg("agg_small_grads_max_bytes") = 0, py::arg("agg_small_grads_max_group") = 10, R"doc(
What batch_all_reduce(arrays, ...) with the same packing arguments would run:
a list of packs in the order they run, each a dict with "dtype" ("f32"),
"count" and "bytes" (of the pack), "arrays" (indexes of the arrays with
elements in it) and "algorithm". Only the arrays' sizes, dtypes and memory
matter; nothing is sent. ValueError as batch_all_reduce.)doc")
      .def(
          "close",
          [](PyCommunicator& self) {
            py::gil_scoped_release release;
            self.close();
          },
          "Frees the communicator now (local, not collective); later calls raise ValueError. Idempotent.")
      .def("__enter__", [](py::object self) { return self; })
      .def("__exit__",
           [](PyCommunicator& self, py::handle, py::handle, py::handle) {
             py::gil_scoped_release release;
             self.close();
           })
      .def("__repr__", [](PyCommunicator& self) {
        bool closed = false;
        {
          py::gil_scoped_release release;  // as for `closed`
          closed = self.closed();
        }
        return fmt::format("<strata.Communicator rank {} of {}{}>", self.rank(), self.size(),
                           closed ? ", closed" : "");
      });
}

}  // namespace strata_py
