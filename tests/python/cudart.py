"""The CUDA runtime through ctypes, for the Python tests on CUDA memory: on
the CUDA runtime + NCCL test double (tests/gpu/double, found first through
LD_LIBRARY_PATH) or on a GPU. It loads the soname strata's GPU backend and
the module use (libcudart.so.13), so all three share one runtime: the same
device memory, streams and current device. No PyTorch or CuPy needed."""
import ctypes
import time

import numpy as np

SONAME = "libcudart.so.13"
HOST_TO_DEVICE, DEVICE_TO_HOST = 1, 2  # cudaMemcpyKind
NON_BLOCKING = 1  # cudaStreamNonBlocking
LEGACY, PER_THREAD = 1, 2  # cudaStreamLegacy, cudaStreamPerThread as handles

_lib = None


def lib():
    global _lib
    if _lib is None:
        _lib = ctypes.CDLL(SONAME)
        for name, args in [("cudaSetDevice", [ctypes.c_int]),
                           ("cudaMalloc", [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]),
                           ("cudaFree", [ctypes.c_void_p]),
                           ("cudaMallocHost", [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]),
                           ("cudaFreeHost", [ctypes.c_void_p]),
                           ("cudaStreamCreateWithFlags", [ctypes.POINTER(ctypes.c_void_p), ctypes.c_uint]),
                           ("cudaStreamDestroy", [ctypes.c_void_p]),
                           ("cudaStreamSynchronize", [ctypes.c_void_p]),
                           ("cudaMemcpyAsync", [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int,
                                                ctypes.c_void_p]),
                           ("cudaLaunchHostFunc", [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p])]:
            getattr(_lib, name).argtypes = args
            getattr(_lib, name).restype = ctypes.c_int
        _lib.cudaGetErrorString.argtypes = [ctypes.c_int]
        _lib.cudaGetErrorString.restype = ctypes.c_char_p
    return _lib


def check(status, what):
    if status != 0:
        raise RuntimeError(f"{what} failed: {lib().cudaGetErrorString(status).decode()}")


# The producer's slow work before its upload, run by the stream (a CUDA
# call from inside it would be an error; time.sleep is none): strata,
# ordered after the stream, cannot start before the stream passes it.
# Nothing asserts a time. Kept alive for the life of the process.
_HOLD_BACK = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(lambda _: time.sleep(0.2))


def new_stream():
    """A non-blocking stream: no default stream orders it, nor it them."""
    handle = ctypes.c_void_p()
    check(lib().cudaStreamCreateWithFlags(ctypes.byref(handle), NON_BLOCKING), "cudaStreamCreateWithFlags")
    return handle.value


def destroy_stream(stream):
    check(lib().cudaStreamDestroy(stream), "cudaStreamDestroy")


def synchronize(stream):
    check(lib().cudaStreamSynchronize(stream), "cudaStreamSynchronize")


class Pinned:
    """Page-locked host memory as a numpy array (the double, as CUDA, wants
    it for asynchronous copies)."""

    def __init__(self, count, dtype=np.float32):
        pointer = ctypes.c_void_p()
        nbytes = max(1, count * np.dtype(dtype).itemsize)
        check(lib().cudaMallocHost(ctypes.byref(pointer), nbytes), "cudaMallocHost")
        self.pointer = pointer.value
        self.array = np.frombuffer((ctypes.c_char * nbytes).from_address(self.pointer), dtype=dtype, count=count)

    def free(self):
        check(lib().cudaFreeHost(self.pointer), "cudaFreeHost")


class DeviceArray:
    """count elements of device memory behind __cuda_array_interface__
    (version 3), whose 'stream' is `producer` (None: no stream named).
    Produced and read through explicit streams only."""

    def __init__(self, count, dtype=np.float32, producer=None):
        pointer = ctypes.c_void_p()
        self.dtype = np.dtype(dtype)
        self.count = count
        check(lib().cudaMalloc(ctypes.byref(pointer), max(1, count * self.dtype.itemsize)), "cudaMalloc")
        self.pointer = pointer.value
        self.staging = Pinned(count, dtype)
        self.__cuda_array_interface__ = {"shape": (count,), "typestr": self.dtype.str, "data": (self.pointer, False),
                                         "version": 3, "strides": None, "stream": producer}

    def produce(self, values, stream):
        """Enqueues on `stream`: 200 ms of nothing, then the upload of
        `values`. Returns at once."""
        synchronize(stream)  # the staging buffer may still feed an earlier upload
        self.staging.array[:] = values
        check(lib().cudaLaunchHostFunc(stream, ctypes.cast(_HOLD_BACK, ctypes.c_void_p), None), "cudaLaunchHostFunc")
        check(lib().cudaMemcpyAsync(self.pointer, self.staging.pointer, self.count * self.dtype.itemsize,
                                    HOST_TO_DEVICE, stream), "cudaMemcpyAsync (upload)")

    def fill(self, value, stream):
        """The whole array = value, through `stream`, done when it returns."""
        synchronize(stream)
        self.staging.array[:] = value
        check(lib().cudaMemcpyAsync(self.pointer, self.staging.pointer, self.count * self.dtype.itemsize,
                                    HOST_TO_DEVICE, stream), "cudaMemcpyAsync (fill)")
        synchronize(stream)

    def read(self, stream):
        """A copy of the contents, read through `stream` once it passed
        everything enqueued on it."""
        check(lib().cudaMemcpyAsync(self.staging.pointer, self.pointer, self.count * self.dtype.itemsize,
                                    DEVICE_TO_HOST, stream), "cudaMemcpyAsync (download)")
        synchronize(stream)
        return self.staging.array.copy()

    def free(self):
        check(lib().cudaFree(self.pointer), "cudaFree")
        self.staging.free()
