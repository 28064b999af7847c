// Python arrays as strata::Tensor views for the length of one call. Three
// ways in, tried in this order:
//   1. __cuda_array_interface__ (CuPy, Numba, PyTorch CUDA tensors): CUDA
//      memory;
//   2. the buffer protocol (numpy, memoryview, bytearray, array.array): host
//      memory; numpy bfloat16 arrays (ml_dtypes, TensorFlow, JAX name their
//      dtype "bfloat16") are viewed as uint16 and reduced as bf16;
//   3. DLPack (__dlpack__ / __dlpack_device__): CPU or CUDA memory.
#pragma once

#include <pybind11/pybind11.h>

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "strata/options.hpp"
#include "strata/types.hpp"

namespace strata_py {

namespace py = pybind11;

// Whether strata writes into the array (results, in-place calls, broadcast
// targets) or only reads it (the input of an out-of-place call).
enum class Access { read, write };

// Holds what keeps one array's memory valid while a collective runs with the
// GIL released (a Py_buffer, a DLPack managed tensor). Construct and destroy
// it with the GIL held; tensor() and order_after_producer() need no GIL.
// Neither copyable nor movable: keep several in a std::deque.
//
// A CUDA array's producer may still be writing it on a stream of its own;
// strata orders after the call's stream (stream=), or after the legacy
// default stream when there is none, not after the producer's. So: a
// DLPack array is exported for the call's stream (__dlpack__(stream=...):
// its producer orders its work before that stream, DLPack's contract), or
// for the legacy default stream (1) in a blocking call; an array whose
// __cuda_array_interface__ names a stream is ordered after it by
// order_after_producer().
class ArrayView {
 public:
  // Views `obj` as one contiguous tensor of all its elements. `field` names
  // the argument in messages ("x", "arrays[2]"); `stream` is the call's
  // stream (nullptr: a blocking call), what a DLPack CUDA array is exported
  // for. Throws strata::InvalidArgument (Python ValueError) for arrays that
  // are not C-contiguous, read-only where `access` is write, of an
  // unsupported dtype, big-endian, masked, or on a DLPack device other than
  // CPU or CUDA; and py::type_error for an object that is no array by any of
  // the three ways.
  ArrayView(py::handle obj, std::string field, Access access, strata::StreamHandle stream = nullptr);
  ~ArrayView();
  ArrayView(const ArrayView&) = delete;
  ArrayView& operator=(const ArrayView&) = delete;

  const strata::Tensor& tensor() const { return tensor_; }

  // The array's shape as its producer gave it (empty for a 0-d array); the
  // tensor counts every element whatever the shape. Read from what the view
  // holds, so calls that never ask pay nothing for it.
  std::vector<std::size_t> shape() const;

  // For a CUDA array whose producer named a stream (or was asked for the
  // legacy default stream, DLPack in a blocking call): orders the call
  // after the work queued on it so far. A blocking call (`stream` null)
  // blocks the host until that work is done; a stream-ordered call makes
  // `stream` wait for it on the GPU and returns at once (nothing when it is
  // `stream` itself). No-op otherwise. Throws strata::BackendError if CUDA
  // fails. Call without the GIL.
  void order_after_producer(strata::StreamHandle stream) const;

 private:
  void view_buffer(py::handle obj, Access access, bool as_bfloat16);
  void view_cuda_array_interface(py::handle interface, Access access);  // the __cuda_array_interface__ dict
  void view_dlpack(py::handle obj, strata::StreamHandle stream);
  void release();  // gives the buffer and the DLPack tensor back; idempotent

  std::string field_;
  strata::Tensor tensor_;
  std::vector<long long> cuda_shape_;  // the __cuda_array_interface__ shape (the others are in buffer_, dlpack_)
  Py_buffer buffer_{};
  bool has_buffer_ = false;
  void* dlpack_ = nullptr;               // DLManagedTensor*, released by its deleter
  std::optional<std::uintptr_t> stream_;  // the producer's CUDA stream, to order after
};

// Views of every array of one call; destroy it with the GIL held.
using ArrayViews = std::deque<ArrayView>;

// Orders the call on `stream` after the producers of all `views` (see
// order_after_producer).
void order_after_producers(const ArrayViews& views, strata::StreamHandle stream);

// Whether `obj` is a numpy array whose dtype calls itself bfloat16
// (ml_dtypes, TensorFlow, JAX): viewed as uint16 and reduced as bf16.
bool is_numpy_bfloat16(py::handle obj);

}  // namespace strata_py
