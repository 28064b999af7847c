"""Independent references and checks for the strata Python tests."""
import ctypes

import numpy as np
from mpi4py import MPI

WORLD = MPI.COMM_WORLD

# Every dtype strata reduces that numpy has natively (bfloat16 is tested
# through DLPack and, where installed, ml_dtypes).
DTYPES = ["float32", "float64", "float16", "int8", "uint8", "int32", "uint32", "int64", "uint64"]
OPS = ["sum", "mean", "min", "max", "prod"]


def rank_input(rank, count, dtype, op):
    """Rank `rank`'s input: small integer values, exact in every dtype, so the
    reference does not depend on the order of additions; prod stays within
    int8 and min/max differ between ranks."""
    i = np.arange(count, dtype=np.int64)
    if op == "prod":
        values = 1 + (i + rank) % 2  # 1 or 2: at most 2**ranks
        if np.dtype(dtype).kind == "i":
            values = np.where((i + rank) % 3 == 0, -values, values)
    else:
        values = (i * 7 + rank * 13) % 29  # 0 .. 28: sums of up to 8 ranks fit every dtype
        if np.dtype(dtype).kind in "if":
            values = values - 14  # negative values too (mean truncates toward zero)
    return values.astype(dtype)


def reference(inputs, dtype, op):
    """op over the ranks' inputs, computed in int64/float64 then converted the
    way strata defines it: integer sum/prod wrap, mean = sum / n in the dtype
    (integers truncate toward zero, float16 divided in float32)."""
    n = len(inputs)
    dt = np.dtype(dtype)
    wide = np.stack([x.astype(np.float64 if dt.kind == "f" else np.int64) for x in inputs])
    if op == "min":
        return wide.min(axis=0).astype(dt)
    if op == "max":
        return wide.max(axis=0).astype(dt)
    if op == "prod":
        result = np.prod(wide, axis=0)
        return result.astype(dt) if dt.kind == "f" else wrap(result, dt)
    total = wide.sum(axis=0)
    if op == "sum":
        return total.astype(dt) if dt.kind == "f" else wrap(total, dt)
    # mean
    if dt.kind == "f":
        in_dtype = total.astype(dt)  # the sum as strata holds it (exact here)
        compute = np.float32 if dt == np.float16 else dt.type
        return (in_dtype.astype(compute) / compute(n)).astype(dt)
    summed = wrap(total, dt).astype(np.int64) if dt != np.uint64 else total
    return (np.sign(summed) * (np.abs(summed) // n)).astype(dt)


def wrap(values, dt):
    """int64 values reduced modulo 2**bits, as the dtype's arithmetic does."""
    return values.astype(np.uint64).astype(dt) if dt.itemsize == 8 else (values % (1 << (8 * dt.itemsize))).astype(
        np.int64).astype(np.dtype(f"u{dt.itemsize}")).view(dt)


def all_inputs(count, dtype, op, size=None):
    size = WORLD.Get_size() if size is None else size
    return [rank_input(r, count, dtype, op) for r in range(size)]


def assert_same_on_every_rank(array, what="result"):
    """Every rank holds the same bytes."""
    mine = np.ascontiguousarray(array).tobytes()
    everyone = WORLD.allgather(mine)
    differing = [r for r, b in enumerate(everyone) if b != everyone[0]]
    assert not differing, f"{what}: ranks {differing} differ from rank 0"


def assert_equal(actual, expected, what):
    """Equal element by element (the data hold no NaN), naming the first difference."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.dtype == expected.dtype, f"{what}: dtype {actual.dtype} != {expected.dtype}"
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    if not np.array_equal(actual, expected):
        i = int(np.flatnonzero(actual.reshape(-1) != expected.reshape(-1))[0])
        raise AssertionError(f"{what}: element {i} is {actual.reshape(-1)[i]!r}, expected {expected.reshape(-1)[i]!r}"
                             f" (rank {WORLD.Get_rank()} of {WORLD.Get_size()})")


# --- a minimal DLPack producer (DLPack 0.6 ABI), to reach the DLPack path
# without PyTorch or CuPy: the tensor views a numpy array's memory, or
# claims to be CUDA memory at a given address.

class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int), ("device_id", ctypes.c_int)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


_DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class _DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", _DELETER)]


_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]

KDL_CPU, KDL_CUDA = 1, 2
KDL_INT, KDL_UINT, KDL_FLOAT, KDL_BFLOAT = 0, 1, 2, 4


class FakeDLPack:
    """An object with only __dlpack__ / __dlpack_device__. `deleted` counts
    the deleter calls (the consumer must call it exactly once per capsule)."""

    def __init__(self, backing, code, bits, device_type=KDL_CPU, address=None, shape=None, strides=None):
        self.backing = backing  # keeps the memory alive
        self.device_type = device_type
        self.deleted = 0
        self.requested_streams = []
        shape = backing.shape if shape is None else shape
        self._shape = (ctypes.c_int64 * len(shape))(*shape)
        self._strides = None if strides is None else (ctypes.c_int64 * len(strides))(*strides)
        self._deleter = _DELETER(self._delete)
        self._managed = _DLManagedTensor()
        t = self._managed.dl_tensor
        t.data = backing.ctypes.data if address is None else address
        t.device = _DLDevice(device_type, 0)
        t.ndim = len(shape)
        t.dtype = _DLDataType(code, bits, 1)
        t.shape = self._shape
        t.strides = self._strides
        t.byte_offset = 0
        self._managed.deleter = self._deleter

    def _delete(self, _):
        self.deleted += 1

    def __dlpack_device__(self):
        return (self.device_type, 0)

    def __dlpack__(self, stream=None):
        self.requested_streams.append(stream)
        return _capsule_new(ctypes.addressof(self._managed), b"dltensor", None)


class OnlyDLPack:
    """Offers an array through DLPack and nothing else (numpy's own export)."""

    def __init__(self, a):
        self.a = a

    def __dlpack__(self, stream=None):
        return self.a.__dlpack__()

    def __dlpack_device__(self):
        return self.a.__dlpack_device__()


def still_works(comm):
    """A communicator that refused bad input still reduces correctly."""
    x = rank_input(WORLD.Get_rank(), 100, "float32", "sum")
    comm.all_reduce(x)
    assert_equal(x, reference(all_inputs(100, "float32", "sum"), "float32", "sum"), "after an error")


def bfloat16_bits(values):
    """bfloat16 bit patterns of float32 values that bfloat16 holds exactly."""
    bits = np.asarray(values, dtype=np.float32).view(np.uint32)
    assert np.all(bits & 0xFFFF == 0), "value not exact in bfloat16"
    return (bits >> 16).astype(np.uint16)


def bfloat16_values(bits):
    return (np.asarray(bits, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


# --- CUDA streams as Python libraries hand them out, without those libraries

class ProtocolStream:
    """The CUDA stream protocol (cuda.core, numba-cuda): __cuda_stream__()
    returns (version, handle)."""

    def __init__(self, handle, version=0):
        self.handle, self.version = handle, version

    def __cuda_stream__(self):
        return (self.version, self.handle)


class TorchLikeStream:
    """torch.cuda.Stream's attribute: .cuda_stream, the cudaStream_t as an int."""

    def __init__(self, handle):
        self.cuda_stream = handle


class CupyLikeStream:
    """cupy.cuda.Stream's attribute: .ptr."""

    def __init__(self, handle):
        self.ptr = handle


# The forms of stream=, each made from a cudaStream_t's value.
STREAM_FORMS = {
    "int": lambda h: h,
    "__cuda_stream__": ProtocolStream,
    ".cuda_stream": TorchLikeStream,
    ".ptr": CupyLikeStream,
}
