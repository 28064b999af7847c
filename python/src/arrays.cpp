#include "arrays.hpp"

#include <dlpack/dlpack.h>
#include <fmt/format.h>

#include <cstring>
#include <limits>
#include <utility>
#include <vector>

#include "cuda_support.hpp"
#include "strata/errors.hpp"
#include "util/where.hpp"

namespace strata_py {

namespace {

using strata::DataType;
using strata::InvalidArgument;

constexpr const char* kSupported =
    "float16, float32, float64, bfloat16, int8, uint8, int32, uint32, int64, uint64";

// Element kinds as numpy's typestr spells them: 'f' float, 'i' signed
// integer, 'u' unsigned integer, 'b' bool, 'c' complex, 'V' anything else.
std::string dtype_name(char kind, std::size_t bytes) {
  switch (kind) {
    case 'f': return fmt::format("float{}", bytes * 8);
    case 'i': return fmt::format("int{}", bytes * 8);
    case 'u': return fmt::format("uint{}", bytes * 8);
    case 'b': return "bool";
    case 'c': return fmt::format("complex{}", bytes * 8);
    default: return fmt::format("an opaque {}-byte type", bytes);
  }
}

DataType to_dtype(char kind, std::size_t bytes, const std::string& field) {
  if (kind == 'f' && bytes == 2) return DataType::f16;
  if (kind == 'f' && bytes == 4) return DataType::f32;
  if (kind == 'f' && bytes == 8) return DataType::f64;
  if (kind == 'i' && bytes == 1) return DataType::i8;
  if (kind == 'i' && bytes == 4) return DataType::i32;
  if (kind == 'i' && bytes == 8) return DataType::i64;
  if (kind == 'u' && bytes == 1) return DataType::u8;
  if (kind == 'u' && bytes == 4) return DataType::u32;
  if (kind == 'u' && bytes == 8) return DataType::u64;
  throw InvalidArgument(strata::util::located(fmt::format(
      "{} has dtype {}, which strata does not reduce; supported: {}", field, dtype_name(kind, bytes), kSupported)));
}

// The kind of a struct-module format string ("f", "<d", "=q", "B").
char kind_of_format(const char* format, const std::string& field) {
  std::string_view text = format ? format : "B";  // NULL means unsigned bytes
  if (!text.empty() && (text.front() == '>' || text.front() == '!'))
    throw InvalidArgument(
        strata::util::located(fmt::format("{} is big-endian (format '{}'); pass a native-endian array", field, text)));
  while (!text.empty() && (text.front() == '@' || text.front() == '=' || text.front() == '<')) text.remove_prefix(1);
  if (text.size() == 1) {
    switch (text.front()) {
      case 'e': case 'f': case 'd': return 'f';
      case 'b': case 'h': case 'i': case 'l': case 'q': case 'n': return 'i';
      case 'B': case 'H': case 'I': case 'L': case 'Q': case 'N': return 'u';
      case '?': return 'b';
      case 'Z': return 'c';
      default: break;
    }
  }
  if (text.size() == 2 && text.front() == 'Z') return 'c';
  throw InvalidArgument(strata::util::located(fmt::format(
      "{} has element format '{}', which strata does not reduce; supported: {}", field, format, kSupported)));
}

// Product of `shape`, refusing negative extents and overflow.
template <class Extent>
std::size_t element_count(const Extent* shape, std::size_t ndim, const std::string& field) {
  std::size_t count = 1;
  for (std::size_t d = 0; d < ndim; ++d) {
    if (shape[d] < 0)
      throw InvalidArgument(
          strata::util::located(fmt::format("{} has a negative extent {} in dimension {}", field, shape[d], d)));
    const auto extent = static_cast<std::size_t>(shape[d]);
    if (extent != 0 && count > std::numeric_limits<std::size_t>::max() / extent)
      throw InvalidArgument(
          strata::util::located(fmt::format("{} has more elements than the address space holds", field)));
    count *= extent;
  }
  return count;
}

// Whether `strides` (in units of `unit`: bytes, or elements for DLPack)
// describe a C-contiguous layout of `shape`. Extents of 1 may carry any
// stride, and an empty array is contiguous.
template <class Extent, class Stride>
bool c_contiguous(const Extent* shape, const Stride* strides, std::size_t ndim, long long unit) {
  long long expected = unit;
  for (std::size_t d = ndim; d-- > 0;) {
    if (shape[d] == 0) return true;
    if (shape[d] != 1 && static_cast<long long>(strides[d]) != expected) return false;
    expected *= static_cast<long long>(shape[d]);
  }
  return true;
}

[[noreturn]] void not_contiguous(const std::string& field) {
  throw InvalidArgument(strata::util::located(fmt::format(
      "{} is not C-contiguous; strata reduces one contiguous block: pass numpy.ascontiguousarray({}) (or a copy)",
      field, field)));
}

[[noreturn]] void read_only(const std::string& field) {
  throw InvalidArgument(
      strata::util::located(fmt::format("{} is read-only, but strata writes the result into it; pass a writable array "
                                        "(for all_reduce: or a separate out=)",
                                        field)));
}

std::string type_name(py::handle obj) { return Py_TYPE(obj.ptr())->tp_name; }

// obj.name, or a null object when obj has no such attribute. Unlike
// py::hasattr it raises and discards no AttributeError for a missing name,
// which would cost a microsecond per numpy array asked for
// __cuda_array_interface__.
py::object optional_attr(py::handle obj, const char* name) {
  py::str key(name);
  PyObject* value = nullptr;
#if PY_VERSION_HEX >= 0x030D0000
  const int found = PyObject_GetOptionalAttr(obj.ptr(), key.ptr(), &value);
#else
  const int found = _PyObject_LookupAttr(obj.ptr(), key.ptr(), &value);
#endif
  if (found < 0) throw py::error_already_set();
  return py::reinterpret_steal<py::object>(value);
}

py::object item(const py::dict& d, const char* key) { return d.contains(key) ? py::object(d[key]) : py::none(); }

}  // namespace

// numpy cannot export bfloat16 dtypes through the buffer protocol. Such
// user-defined dtypes have kind 'V'; dtype.kind is checked first because
// dtype.name costs about a microsecond, more than the rest of a small call.
bool is_numpy_bfloat16(py::handle obj) {
  const py::object dtype = optional_attr(obj, "dtype");
  if (!dtype) return false;
  const py::object kind = optional_attr(dtype, "kind"), itemsize = optional_attr(dtype, "itemsize");
  if (!kind || !itemsize || !py::isinstance<py::str>(kind) || kind.cast<std::string>() != "V" ||
      !py::isinstance<py::int_>(itemsize) || itemsize.cast<long long>() != 2)
    return false;
  const py::object name = optional_attr(dtype, "name");
  return name && py::isinstance<py::str>(name) && name.cast<std::string>() == "bfloat16" && optional_attr(obj, "view");
}

ArrayView::ArrayView(py::handle obj, std::string field, Access access, strata::StreamHandle stream)
    : field_(std::move(field)) {
  try {
    if (py::object interface = optional_attr(obj, "__cuda_array_interface__")) {
      view_cuda_array_interface(interface, access);
    } else if (is_numpy_bfloat16(obj)) {
      view_buffer(obj.attr("view")("uint16"), access, /*as_bfloat16=*/true);
    } else if (PyObject_CheckBuffer(obj.ptr())) {
      view_buffer(obj, access, /*as_bfloat16=*/false);
    } else if (optional_attr(obj, "__dlpack__") && optional_attr(obj, "__dlpack_device__")) {
      view_dlpack(obj, stream);
    } else {
      throw py::type_error(fmt::format("{} is a {}, not an array: pass a numpy array (or any object with the buffer "
                                       "protocol), an object with __cuda_array_interface__, or a DLPack tensor",
                                       field_, type_name(obj)));
    }
  } catch (...) {
    release();  // the destructor does not run for a constructor that throws
    throw;
  }
}

ArrayView::~ArrayView() { release(); }

void ArrayView::release() {
  if (has_buffer_) PyBuffer_Release(&buffer_);
  has_buffer_ = false;
  if (dlpack_ != nullptr) {
    auto* managed = static_cast<DLManagedTensor*>(dlpack_);
    if (managed->deleter != nullptr) managed->deleter(managed);
    dlpack_ = nullptr;
  }
}

void ArrayView::view_buffer(py::handle obj, Access access, bool as_bfloat16) {
  const int flags = access == Access::write ? PyBUF_RECORDS : PyBUF_RECORDS_RO;
  if (PyObject_GetBuffer(obj.ptr(), &buffer_, flags) != 0) {
    py::error_already_set error;  // fetches and clears the Python error
    if (access == Access::write) {
      if (PyObject_GetBuffer(obj.ptr(), &buffer_, PyBUF_RECORDS_RO) == 0) {
        PyBuffer_Release(&buffer_);
        read_only(field_);
      }
      PyErr_Clear();
    }
    throw InvalidArgument(strata::util::located(fmt::format(
        "{} (a {}) cannot be viewed through the buffer protocol: {}", field_, type_name(obj), error.what())));
  }
  has_buffer_ = true;
  if (!PyBuffer_IsContiguous(&buffer_, 'C')) not_contiguous(field_);
  const auto itemsize = static_cast<std::size_t>(buffer_.itemsize);
  if (itemsize == 0) throw InvalidArgument(strata::util::located(fmt::format("{} has elements of size 0", field_)));
  if (as_bfloat16) {
    tensor_.dtype = DataType::bf16;
  } else {
    tensor_.dtype = to_dtype(kind_of_format(buffer_.format, field_), itemsize, field_);
  }
  tensor_.data = buffer_.buf;
  tensor_.count = static_cast<std::size_t>(buffer_.len) / itemsize;
  tensor_.memory = strata::Memory::host;
}

void ArrayView::view_cuda_array_interface(py::handle interface, Access access) {
  if (!py::isinstance<py::dict>(interface))
    throw InvalidArgument(strata::util::located(
        fmt::format("{}.__cuda_array_interface__ is a {}, not a dict", field_, type_name(interface))));
  const auto cai = interface.cast<py::dict>();
  if (!item(cai, "mask").is_none())
    throw InvalidArgument(
        strata::util::located(fmt::format("{} is a masked CUDA array; strata reduces every element, pass one without a "
                                          "mask",
                                          field_)));

  std::vector<long long> shape;
  for (py::handle extent : py::tuple(item(cai, "shape"))) shape.push_back(extent.cast<long long>());
  const std::size_t count = element_count(shape.data(), shape.size(), field_);

  const auto typestr = item(cai, "typestr").cast<std::string>();
  std::size_t bytes = 0;
  if (typestr.size() >= 3) bytes = std::strtoul(typestr.c_str() + 2, nullptr, 10);
  if (bytes == 0)
    throw InvalidArgument(strata::util::located(
        fmt::format("{} has __cuda_array_interface__ typestr '{}', not like '<f4'", field_, typestr)));
  if (typestr[0] == '>')
    throw InvalidArgument(strata::util::located(
        fmt::format("{} is big-endian (typestr '{}'); pass a native-endian array", field_, typestr)));
  tensor_.dtype = to_dtype(typestr[1], bytes, field_);

  const auto data = py::tuple(item(cai, "data"));
  if (data.size() != 2)
    throw InvalidArgument(
        strata::util::located(fmt::format("{}.__cuda_array_interface__['data'] must be (pointer, read_only)", field_)));
  const auto pointer = data[0].cast<unsigned long long>();
  if (access == Access::write && data[1].cast<bool>()) read_only(field_);

  const py::object strides = item(cai, "strides");
  if (!strides.is_none()) {
    std::vector<long long> byte_strides;
    for (py::handle stride : py::tuple(strides)) byte_strides.push_back(stride.cast<long long>());
    if (byte_strides.size() != shape.size())
      throw InvalidArgument(strata::util::located(
          fmt::format("{} has {} strides for {} dimensions", field_, byte_strides.size(), shape.size())));
    if (!c_contiguous(shape.data(), byte_strides.data(), shape.size(), static_cast<long long>(bytes)))
      not_contiguous(field_);
  }

  const py::object stream = item(cai, "stream");
  if (!stream.is_none()) {
    const auto handle = stream.cast<unsigned long long>();
    if (handle == 0)
      throw InvalidArgument(
          strata::util::located(fmt::format("{}.__cuda_array_interface__['stream'] = 0 is disallowed by the interface "
                                            "(ambiguous); use 1 (legacy default) or 2 (per-thread default)",
                                            field_)));
    stream_ = static_cast<std::uintptr_t>(handle);
  }

  tensor_.data = reinterpret_cast<void*>(static_cast<std::uintptr_t>(pointer));
  tensor_.count = count;
  cuda_shape_ = std::move(shape);
  tensor_.memory = strata::Memory::cuda;
  tensor_.device = cuda::device_of(tensor_.data);
}

void ArrayView::view_dlpack(py::handle obj, strata::StreamHandle stream) {
  const auto device = py::tuple(obj.attr("__dlpack_device__")());
  if (device.size() != 2)
    throw InvalidArgument(strata::util::located(fmt::format("{}.__dlpack_device__() must return (type, id)", field_)));
  const int type = device[0].cast<int>(), id = device[1].cast<int>();
  const bool on_cuda = type == kDLCUDA || type == kDLCUDAManaged;
  const bool on_host = type == kDLCPU || type == kDLCUDAHost;
  if (!on_cuda && !on_host)
    throw InvalidArgument(strata::util::located(
        fmt::format("{} lives on DLPack device type {} (id {}); strata takes CPU ({}) and CUDA ({}) "
                    "memory",
                    field_, type, id, int(kDLCPU), int(kDLCUDA))));
  // For CUDA, ask the producer to order its work before the call's stream,
  // which strata orders after; in a blocking call before the legacy default
  // stream (DLPack's stream = 1), which order_after_producer() then waits
  // for on the host.
  const auto consumer = stream ? reinterpret_cast<std::uintptr_t>(stream) : std::uintptr_t{1};
  py::object capsule = on_cuda ? obj.attr("__dlpack__")(py::arg("stream") = consumer) : obj.attr("__dlpack__")();
  if (!PyCapsule_IsValid(capsule.ptr(), "dltensor"))
    throw InvalidArgument(
        strata::util::located(fmt::format("{}.__dlpack__() did not return an unused 'dltensor' capsule", field_)));
  dlpack_ = PyCapsule_GetPointer(capsule.ptr(), "dltensor");
  // The capsule is ours now: renaming it stops its destructor from freeing
  // the tensor, which our destructor hands back through its deleter.
  PyCapsule_SetName(capsule.ptr(), "used_dltensor");
  const DLTensor& t = static_cast<DLManagedTensor*>(dlpack_)->dl_tensor;

  if (t.dtype.lanes != 1)
    throw InvalidArgument(strata::util::located(
        fmt::format("{} has {}-lane vector elements; strata takes scalars", field_, t.dtype.lanes)));
  const std::size_t bytes = t.dtype.bits / 8;
  if (t.dtype.code == kDLBfloat && t.dtype.bits == 16) {
    tensor_.dtype = DataType::bf16;
  } else {
    const char kind = t.dtype.code == kDLFloat ? 'f' : t.dtype.code == kDLInt ? 'i' : t.dtype.code == kDLUInt ? 'u' : 'V';
    tensor_.dtype = to_dtype(kind, bytes, field_);
  }
  const auto ndim = static_cast<std::size_t>(t.ndim);
  tensor_.count = element_count(t.shape, ndim, field_);
  if (t.strides != nullptr && !c_contiguous(t.shape, t.strides, ndim, 1)) not_contiguous(field_);
  tensor_.data = static_cast<char*>(t.data) + t.byte_offset;
  if (on_cuda) {
    tensor_.memory = strata::Memory::cuda;
    tensor_.device = id;
    stream_ = consumer;  // nothing to do when it is the call's stream
  } else {
    tensor_.memory = strata::Memory::host;
  }
}

std::vector<std::size_t> ArrayView::shape() const {
  // Extents were checked >= 0 when the view was made (element_count; a
  // buffer's by Python).
  using Shape = std::vector<std::size_t>;
  if (has_buffer_) return Shape(buffer_.shape, buffer_.shape + buffer_.ndim);  // PyBUF_RECORDS asks for the shape
  if (dlpack_ != nullptr) {
    const DLTensor& t = static_cast<DLManagedTensor*>(dlpack_)->dl_tensor;
    return Shape(t.shape, t.shape + t.ndim);
  }
  return Shape(cuda_shape_.begin(), cuda_shape_.end());
}

void ArrayView::order_after_producer(strata::StreamHandle stream) const {
  if (tensor_.memory != strata::Memory::cuda || !stream_) return;
  if (stream == nullptr) {
    cuda::synchronize(*stream_, tensor_.device);
  } else {
    cuda::stream_wait(reinterpret_cast<std::uintptr_t>(stream), *stream_, tensor_.device);
  }
}

void order_after_producers(const ArrayViews& views, strata::StreamHandle stream) {
  for (const ArrayView& view : views) view.order_after_producer(stream);
}

}  // namespace strata_py
