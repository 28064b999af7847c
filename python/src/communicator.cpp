#include "communicator.hpp"

#include <fmt/format.h>

#include <vector>

#include "arrays.hpp"
#include "convert.hpp"
#include "request.hpp"
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

// Which form of a collective a method runs: the blocking call, the
// non-blocking one (a started strata.Request) or the persistent one (a
// bound strata.Request, started by its start()).
enum class Form { blocking, started, persistent };

// Runs the call of `form`: `call(c)` makes the C++ call of that form on the
// communicator. Blocking: returns `result` once the call returned (a
// stream-ordered one: once enqueued). Started and persistent: returns a
// strata.Request (`name`) holding `arrays` and `result`, which its wait()
// returns. Orders the call after the arrays' CUDA producers before it runs
// (persistent: at each start()): on the host without a stream, on the
// call's stream with one.
template <Form form, class Call>
py::object launch(const std::shared_ptr<PyCommunicator>& self, CallArrays& arrays, py::object result,
                  const char* name, Call&& call) {
  if constexpr (form == Form::blocking) {
    (void)name;
    {
      py::gil_scoped_release release;
      order_after_producers(*arrays.views, arrays.stream);
      self->call(call);
    }
    return result;
  } else {
    strata::Request request = [&] {
      py::gil_scoped_release release;
      if constexpr (form == Form::started) order_after_producers(*arrays.views, arrays.stream);
      return self->call(call);
    }();
    return py::cast(std::make_unique<PyRequest>(self, std::move(request), std::move(arrays), std::move(result),
                                                name));
  }
}

// The method's name for each form ("all_reduce", "all_reduce_async", "all_reduce_init").
template <Form form>
const char* method_name(const char* blocking, const char* started, const char* persistent) {
  return form == Form::blocking ? blocking : form == Form::started ? started : persistent;
}

template <Form form>
py::object all_reduce(std::shared_ptr<PyCommunicator> self, py::object x, py::object out, py::handle op,
                      py::handle options, py::handle stream) {
  const strata::ReduceOp reduce_op = to_reduce_op(op, "op");
  const strata::CommunicationOptions opts = call_options(options, stream);
  const bool in_place = out.is_none() || out.is(x);
  CallArrays arrays(form != Form::blocking, opts.stream);
  const strata::Tensor in = arrays.view(x, "x", in_place ? Access::write : Access::read).tensor();
  const strata::Tensor result = in_place ? in : arrays.view(out, "out", Access::write).tensor();
  return launch<form>(self, arrays, in_place ? x : out,
                      method_name<form>("all_reduce", "all_reduce_async", "all_reduce_init"),
                      [&](strata::Communicator& c) {
                        if constexpr (form == Form::blocking) c.all_reduce(in, result, reduce_op, opts);
                        else if constexpr (form == Form::started) return c.iall_reduce(in, result, reduce_op, opts);
                        else return c.all_reduce_init(in, result, reduce_op, opts);
                      });
}

template <Form form>
py::object reduce(std::shared_ptr<PyCommunicator> self, py::object x, int root, py::object out, py::handle op,
                  py::handle options, py::handle stream) {
  const strata::ReduceOp reduce_op = to_reduce_op(op, "op");
  const strata::CommunicationOptions opts = call_options(options, stream);
  const bool in_place = out.is_none() || out.is(x);
  CallArrays arrays(form != Form::blocking, opts.stream);
  const strata::Tensor in = arrays.view(x, "x", in_place ? Access::write : Access::read).tensor();
  const strata::Tensor result = in_place ? in : arrays.view(out, "out", Access::write).tensor();
  return launch<form>(self, arrays, in_place ? x : out, method_name<form>("reduce", "reduce_async", "reduce_init"),
                      [&](strata::Communicator& c) {
                        if constexpr (form == Form::blocking) c.reduce(in, result, reduce_op, root, opts);
                        else if constexpr (form == Form::started) return c.ireduce(in, result, reduce_op, root, opts);
                        else return c.reduce_init(in, result, reduce_op, root, opts);
                      });
}

template <Form form>
py::object broadcast(std::shared_ptr<PyCommunicator> self, py::object x, int root, py::handle options,
                     py::handle stream) {
  const strata::CommunicationOptions opts = call_options(options, stream);
  CallArrays arrays(form != Form::blocking, opts.stream);
  const strata::Tensor buffer = arrays.view(x, "x", Access::write).tensor();
  return launch<form>(self, arrays, x, method_name<form>("broadcast", "broadcast_async", "broadcast_init"),
                      [&](strata::Communicator& c) {
                        if constexpr (form == Form::blocking) c.broadcast(buffer, root, opts);
                        else if constexpr (form == Form::started) return c.ibroadcast(buffer, root, opts);
                        else return c.broadcast_init(buffer, root, opts);
                      });
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

template <Form form>
py::object reduce_scatter(std::shared_ptr<PyCommunicator> self, py::object x, py::object out, py::handle op,
                          py::handle options, py::handle stream) {
  const strata::ReduceOp reduce_op = to_reduce_op(op, "op");
  const strata::CommunicationOptions opts = call_options(options, stream);
  const char* name = method_name<form>("reduce_scatter", "reduce_scatter_async", "reduce_scatter_init");
  CallArrays arrays(form != Form::blocking, opts.stream);
  const ArrayView& in = arrays.view(x, "x", Access::read);
  // x's size // ranks: when x's size is no multiple of the ranks, strata
  // refuses the call (on every rank, naming the counts), as for any `out`.
  if (out.is_none())
    out = new_result(x, in, py::make_tuple(in.tensor().count / static_cast<std::size_t>(self->size())), name);
  const strata::Tensor whole = in.tensor();
  const strata::Tensor result = arrays.view(out, "out", Access::write).tensor();
  return launch<form>(self, arrays, out, name, [&](strata::Communicator& c) {
    if constexpr (form == Form::blocking) c.reduce_scatter(whole, result, reduce_op, opts);
    else if constexpr (form == Form::started) return c.ireduce_scatter(whole, result, reduce_op, opts);
    else return c.reduce_scatter_init(whole, result, reduce_op, opts);
  });
}

template <Form form>
py::object all_gather(std::shared_ptr<PyCommunicator> self, py::object x, py::object out, py::handle options,
                      py::handle stream) {
  const strata::CommunicationOptions opts = call_options(options, stream);
  const char* name = method_name<form>("all_gather", "all_gather_async", "all_gather_init");
  CallArrays arrays(form != Form::blocking, opts.stream);
  const ArrayView& in = arrays.view(x, "x", Access::read);
  if (out.is_none()) {
    // (size, *x.shape): out[r] is rank r's x, and the elements lie as the
    // flat blocks do.
    py::list shape;
    shape.append(self->size());
    for (std::size_t extent : in.shape()) shape.append(extent);
    out = new_result(x, in, py::tuple(shape), name);
  }
  const strata::Tensor mine = in.tensor();
  const strata::Tensor result = arrays.view(out, "out", Access::write).tensor();
  return launch<form>(self, arrays, out, name, [&](strata::Communicator& c) {
    if constexpr (form == Form::blocking) c.all_gather(mine, result, opts);
    else if constexpr (form == Form::started) return c.iall_gather(mine, result, opts);
    else return c.all_gather_init(mine, result, opts);
  });
}

// A batch argument: a list or tuple of arrays (TypeError otherwise).
void check_array_list(py::handle arrays) {
  if (!py::isinstance<py::list>(arrays) && !py::isinstance<py::tuple>(arrays))
    throw py::type_error(fmt::format("arrays is a {}: pass a list (or tuple) of arrays",
                                     Py_TYPE(arrays.ptr())->tp_name));
}

// The tensors of a batch's arrays, viewed through `views` ("arrays[i]" in errors).
std::vector<strata::Tensor> tensors_of(py::handle arrays, ArrayViews& views, Access access,
                                       strata::StreamHandle stream) {
  std::vector<strata::Tensor> tensors;
  std::size_t i = 0;
  for (py::handle array : arrays)
    tensors.push_back(views.emplace_back(array, fmt::format("arrays[{}]", i++), access, stream).tensor());
  return tensors;
}

// There is no persistent batch (nor in C++).
template <Form form>
py::object batch_all_reduce(std::shared_ptr<PyCommunicator> self, py::object arrays, py::handle op,
                            py::handle options, int num_packs, long long agg_small_grads_max_bytes,
                            int agg_small_grads_max_group, py::handle stream) {
  static_assert(form != Form::persistent);
  check_array_list(arrays);
  const strata::ReduceOp reduce_op = to_reduce_op(op, "op");
  const strata::CommunicationOptions opts = call_options(options, stream);
  const strata::PackingOptions packing = packing_options(num_packs, agg_small_grads_max_bytes, agg_small_grads_max_group);
  CallArrays views(form != Form::blocking, opts.stream);
  std::vector<strata::Tensor> tensors = tensors_of(arrays, *views.views, Access::write, opts.stream);
  // The list and each array: the caller may change the list meanwhile.
  views.keep(arrays);
  for (py::handle array : arrays) views.keep(array);
  return launch<form>(self, views, arrays, form == Form::blocking ? "batch_all_reduce" : "batch_all_reduce_async",
                      [&](strata::Communicator& c) {
                        if constexpr (form == Form::blocking) c.batch_all_reduce(tensors, reduce_op, packing, opts);
                        else return c.ibatch_all_reduce(tensors, reduce_op, packing, opts);
                      });
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
  const std::vector<strata::Tensor> tensors = tensors_of(arrays, views, Access::read, nullptr);
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

Communicator(comm, all_reduce_spec=None, chunk_bytes=0, check_calls=True, progress_thread=False, verify="off",
reproducible=None, accumulate_f32=False) is collective over
`comm` (every rank must construct it) and duplicates it, so strata's traffic
never mixes with the program's. all_reduce_spec: None (STRATA_SPEC, else
"auto"), a string such as "pscpu/pscpu#2" or "tree:64k:xring", or TensorFlow's
tuple form ("xring", 2, -1) / [("tree", 1, 4096), ("xring", 2, -1)] (limits in
bytes, the last -1). chunk_bytes: pipeline chunk of the ring algorithms
(0 = default, else 4096 .. 1 GiB). check_calls: before any data moves, every
rank checks that all make the same call (strata.Mismatch on every rank
otherwise; STRATA_CHECK=off also turns it off). progress_thread: run the
requests of the *_async and *_init methods on a thread of the communicator
while Python computes, where that thread may run them (host arrays; with
mpi4py's default MPI_THREAD_MULTIPLE every host request;
STRATA_PROGRESS_THREAD=1 also turns it on); the others run inside their
test() and wait(). verify: "checksum" checks every host call's result
end to end (strata.Corrupted on every rank when it is not the reduction of
what the ranks gave; docs/RELIABILITY.md, "Integrity checks"), "off" does
not; STRATA_VERIFY overrides it; every rank must agree. reproducible: None
(STRATA_REPRODUCIBLE, else "off"), "off", "order" (for a given rank count,
the same bits whatever the algorithm, layout, size or form) or "exact" (the
same bits for any assignment of the contributions to ranks;
docs/REPRODUCIBILITY.md). accumulate_f32: f16 and bf16 sums accumulate in
f32 and round once (STRATA_ACCUMULATE=f32 too). Raises ValueError
(strata.InvalidArgument) for a bad spec, chunk size, verify or mode.
Close it (close(), or a `with` block) before MPI is finalized if you keep it
in a long-lived structure.)doc")
      .def(py::init([](py::handle comm, py::handle all_reduce_spec, long long chunk_bytes, bool check_calls,
                       bool progress_thread, const std::string& verify, py::handle reproducible,
                       bool accumulate_f32) {
             if (chunk_bytes < 0)
               throw InvalidArgument(
                   strata::util::located(fmt::format("chunk_bytes = {} must be >= 0 (0 = default)", chunk_bytes)));
             if (verify != "off" && verify != "checksum")
               throw InvalidArgument(strata::util::located(
                   fmt::format("verify = '{}' must be 'checksum' or 'off'", verify)));
             const MPI_Comm mpi = mpi_comm_of(comm);
             strata::Config config;  // by member, not position: Config may grow fields
             config.all_reduce_spec = spec_text(all_reduce_spec, "all_reduce_spec");
             config.chunk_bytes = static_cast<std::size_t>(chunk_bytes);
             config.check_calls = check_calls;
             config.progress_thread = progress_thread;
             config.verify = verify == "checksum" ? strata::Verification::checksum : strata::Verification::off;
             if (!reproducible.is_none()) {
               if (!py::isinstance<py::str>(reproducible))
                 throw InvalidArgument(strata::util::located("reproducible must be None or one of 'off', 'order', 'exact'"));
               config.reproducible = reproducible.cast<std::string>();
             }
             config.accumulate_f32 = accumulate_f32;
             py::gil_scoped_release release;
             return std::make_shared<PyCommunicator>(mpi, std::move(config));
           }),
           py::arg("comm"), py::arg("all_reduce_spec") = py::none(), py::arg("chunk_bytes") = 0,
           py::arg("check_calls") = true, py::arg("progress_thread") = false, py::arg("verify") = "off",
           py::arg("reproducible") = py::none(), py::arg("accumulate_f32") = false)
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
      .def(
          "dump_flight_record",
          [](PyCommunicator& self) {
            py::gil_scoped_release release;
            return self.call([](strata::Communicator& c) { return c.dump_flight_record(); });
          },
          R"doc(
Writes this process's flight record (its last calls on every communicator)
to STRATA_FLIGHT_DIR/flight-<host>-<pid>-rank<world rank>.txt and returns
the file's path. Local. Raises strata.InvalidArgument when STRATA_FLIGHT_DIR
is not set, or the file cannot be written. docs/RELIABILITY.md, "Flight
recorder".)doc")
      .def(
          "check",
          [](PyCommunicator& self) {
            py::gil_scoped_release release;
            self.call([](strata::Communicator& c) { c.check(); });
          },
          R"doc(
Returns None while the communicator is usable. Else raises, once, the error
of a failure that happened after a stream-ordered call (stream=) returned:
strata.DeadlineExceeded naming the ranks that did not arrive, or
strata.BackendError for an asynchronous NCCL or CUDA error; afterwards, and
once a blocking call's timeout or a peer failure broke it,
strata.PeerFailure. Local: it looks at the outstanding GPU work once and
never waits for the GPU or the other ranks. ValueError once closed.)doc")
      .def_property_readonly(
          "closed",
          [](PyCommunicator& self) {
            py::gil_scoped_release release;  // a call in another thread holds the lock closed() takes
            return self.closed();
          },
          "True after close().")
      .def("all_reduce", &all_reduce<Form::blocking>, py::arg("x"), py::arg("out") = py::none(), py::arg("op") = "sum",
           py::arg("options") = py::none(), py::kw_only(),
           py::arg("stream") = py::none(), R"doc(
Every rank's `out` receives op over every rank's `x`; in place (into `x`)
when out is None or out is x. Returns the array holding the result.
All ranks pass the same size, dtype and op. Identical bits on every rank;
float16/bfloat16 reduced in float32; "mean" keeps the dtype (integers
truncate). Arrays must be C-contiguous (ValueError otherwise); numpy arrays
and buffers are host memory, __cuda_array_interface__ / DLPack CUDA arrays
CUDA memory. Raises ValueError (strata.InvalidArgument, before anything is
sent), strata.DeadlineExceeded (a TimeoutError; options.timeout_seconds),
strata.PeerFailure, strata.Unavailable (CUDA arrays without a GPU backend),
strata.BackendError. Runs without the GIL.
stream (keyword; every collective and request takes it): None (the
default) makes the call blocking, with MPI's semantics: it returns once the
result is in place, after waiting on the host for the arrays' producer
streams. A CUDA stream -- a cudaStream_t as an int (0 = the legacy default
stream, as PyTorch's default stream and CuPy's Stream.null mean it; 1 =
cudaStreamLegacy, 2 = cudaStreamPerThread), or an object with
__cuda_stream__(), .cuda_stream (torch.cuda.Stream) or .ptr
(cupy.cuda.Stream) -- makes a call on CUDA arrays stream-ordered, as NCCL's
calls are: it runs after the work already on that stream, work enqueued
there later sees the result, and it returns once enqueued. Arrays whose
producer named another stream are ordered before it on the GPU (DLPack
arrays are exported for it), never by waiting on the host. Errors after the
return are asynchronous: check(), the next call or a request raise them.
Keep the arrays alive until the stream passes the call. Host arrays ignore
it. TypeError for another type, ValueError for a bad handle.)doc")
      .def("reduce", &reduce<Form::blocking>, py::arg("x"), py::arg("root"), py::arg("out") = py::none(),
           py::arg("op") = "sum", py::arg("options") = py::none(), py::kw_only(),
           py::arg("stream") = py::none(), R"doc(
Like all_reduce, but only rank `root` receives the result (in `out`, or in
`x` when out is None or out is x); other ranks' buffers are not written.
Returns `out` (or `x`) on every rank. ValueError for a root outside
[0, size).)doc")
      .def("broadcast", &broadcast<Form::blocking>, py::arg("x"), py::arg("root"), py::arg("options") = py::none(),
           py::kw_only(), py::arg("stream") = py::none(),
           R"doc(
Copies rank `root`'s `x` into every other rank's `x` (same size and dtype
everywhere; writable everywhere). Returns `x`.)doc")
      .def("reduce_scatter", &reduce_scatter<Form::blocking>, py::arg("x"), py::arg("out") = py::none(),
           py::arg("op") = "sum", py::arg("options") = py::none(), py::kw_only(),
           py::arg("stream") = py::none(), R"doc(
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
      .def("all_gather", &all_gather<Form::blocking>, py::arg("x"), py::arg("out") = py::none(),
           py::arg("options") = py::none(), py::kw_only(),
           py::arg("stream") = py::none(), R"doc(
Every rank receives every rank's `x`, rank r's at block r of the result
(MPI_Allgather, ncclAllGather): `out` holds size x x.size elements (any
shape; block r is its r-th run of x.size elements in C order), or, when out
is None, a new numpy array of shape (size, *x.shape) is returned (host
arrays only), so that result[r] is rank r's x. In place when `x` is a view
of this rank's block of out (out[rank] of such an array). Returns the array
holding the result; identical bits on every rank. ValueError when out's
size is not size times x.size. Errors as all_reduce. Runs without the
GIL.)doc")
      .def("batch_all_reduce", &batch_all_reduce<Form::blocking>, py::arg("arrays"), py::arg("op") = "sum",
           py::arg("options") = py::none(), py::arg("num_packs") = 0, py::arg("agg_small_grads_max_bytes") = 0,
           py::arg("agg_small_grads_max_group") = 10, py::kw_only(),
           py::arg("stream") = py::none(), R"doc(
All-reduces each array of the list in place, packed into few transfers:
num_packs > 0 cuts each dtype's arrays into that many packs; else small-
gradient aggregation when agg_small_grads_max_bytes and
agg_small_grads_max_group are > 0; else options.bytes_per_pack (0 =
automatic). Arrays must not overlap. Returns `arrays`. Packed floating-point
results may differ in the last bits from per-array all_reduce (still
identical on every rank).)doc")
      .def("all_reduce_async", &all_reduce<Form::started>, py::arg("x"), py::arg("out") = py::none(),
           py::arg("op") = "sum", py::arg("options") = py::none(), py::kw_only(),
           py::arg("stream") = py::none(), R"doc(
all_reduce, started: returns a strata.Request at once, whose wait()
returns what all_reduce returns (the array holding the result). Arguments,
results and errors as all_reduce; the errors (ValueError for this rank's
invalid arguments included, strata.Mismatch on the others) come from the
request's test() or wait(). The request holds the arrays until it
completes: do not read `out` (or an in-place `x`) or write `x` meanwhile.
Requests complete in the order started; a blocking call completes those
started before it.)doc")
      .def("reduce_async", &reduce<Form::started>, py::arg("x"), py::arg("root"), py::arg("out") = py::none(),
           py::arg("op") = "sum", py::arg("options") = py::none(), py::kw_only(),
           py::arg("stream") = py::none(),
           "reduce, started: returns a strata.Request whose wait() returns what reduce returns (see all_reduce_async).")
      .def("broadcast_async", &broadcast<Form::started>, py::arg("x"), py::arg("root"),
           py::arg("options") = py::none(), py::kw_only(), py::arg("stream") = py::none(),
           "broadcast, started: returns a strata.Request whose wait() returns x (see all_reduce_async).")
      .def("reduce_scatter_async", &reduce_scatter<Form::started>, py::arg("x"), py::arg("out") = py::none(),
           py::arg("op") = "sum", py::arg("options") = py::none(), py::kw_only(),
           py::arg("stream") = py::none(),
           "reduce_scatter, started: returns a strata.Request whose wait() returns the array holding the result (with "
           "out=None the new array, allocated now; see all_reduce_async).")
      .def("all_gather_async", &all_gather<Form::started>, py::arg("x"), py::arg("out") = py::none(),
           py::arg("options") = py::none(), py::kw_only(),
           py::arg("stream") = py::none(),
           "all_gather, started: returns a strata.Request whose wait() returns the array holding the result (with "
           "out=None the new array, allocated now; see all_reduce_async).")
      .def("batch_all_reduce_async", &batch_all_reduce<Form::started>, py::arg("arrays"), py::arg("op") = "sum",
           py::arg("options") = py::none(), py::arg("num_packs") = 0, py::arg("agg_small_grads_max_bytes") = 0,
           py::arg("agg_small_grads_max_group") = 10, py::kw_only(),
           py::arg("stream") = py::none(),
           "batch_all_reduce, started: returns a strata.Request whose wait() returns `arrays` (see all_reduce_async). "
           "The request holds the list and each array until it completes.")
      .def("all_reduce_init", &all_reduce<Form::persistent>, py::arg("x"), py::arg("out") = py::none(),
           py::arg("op") = "sum", py::arg("options") = py::none(), py::kw_only(),
           py::arg("stream") = py::none(), R"doc(
all_reduce, bound for repeated use: returns an inactive, persistent
strata.Request; each start() runs all_reduce(x, out, op, options) again on
the same arrays, reading x anew, and wait() returns what all_reduce
returns. Local: nothing is sent until start(). Arguments as all_reduce;
invalid arguments surface from each run's test() or wait(). The request
holds the arrays for its whole life.)doc")
      .def("reduce_init", &reduce<Form::persistent>, py::arg("x"), py::arg("root"), py::arg("out") = py::none(),
           py::arg("op") = "sum", py::arg("options") = py::none(), py::kw_only(),
           py::arg("stream") = py::none(),
           "reduce, bound for repeated use: a persistent strata.Request (see all_reduce_init).")
      .def("broadcast_init", &broadcast<Form::persistent>, py::arg("x"), py::arg("root"),
           py::arg("options") = py::none(), py::kw_only(),
           py::arg("stream") = py::none(),
           "broadcast, bound for repeated use: a persistent strata.Request (see all_reduce_init).")
      .def("reduce_scatter_init", &reduce_scatter<Form::persistent>, py::arg("x"), py::arg("out") = py::none(),
           py::arg("op") = "sum", py::arg("options") = py::none(), py::kw_only(),
           py::arg("stream") = py::none(),
           "reduce_scatter, bound for repeated use: a persistent strata.Request (see all_reduce_init); with out=None "
           "the result array is allocated once, now, and every run writes into it.")
      .def("all_gather_init", &all_gather<Form::persistent>, py::arg("x"), py::arg("out") = py::none(),
           py::arg("options") = py::none(), py::kw_only(),
           py::arg("stream") = py::none(),
           "all_gather, bound for repeated use: a persistent strata.Request (see all_reduce_init); with out=None the "
           "result array is allocated once, now, and every run writes into it.")
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
