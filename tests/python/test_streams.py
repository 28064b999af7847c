"""stream= and Communicator.check(), without CUDA memory (test_streams_cuda
has it, on the GPU test double).

Every call, request and facade method takes stream= in each form (None,
an int cudaStream_t, an object with __cuda_stream__(), .cuda_stream or
.ptr) and ignores it for host arrays; bad values raise TypeError or
ValueError (strata.InvalidArgument) naming the argument, from every method,
before anything is sent; check() on a usable communicator, after a timeout
broke it, and once closed. Without a GPU, fake CUDA arrays show what the
module makes of the stream: a DLPack CUDA array is exported for the call's
stream (0 -> 1, the legacy default stream), and the call reaches strata's
CUDA path (strata.Unavailable)."""
import numpy as np
import pytest

import strata
from strata import _strata
from helpers import (WORLD, CupyLikeStream, FakeDLPack, KDL_CUDA, KDL_FLOAT, ProtocolStream, TorchLikeStream, all_inputs,
                     assert_equal, rank_input, reference, still_works)

RANK, SIZE = WORLD.Get_rank(), WORLD.Get_size()
NO_GPU = _strata._cuda_device_count() == 0
SOME_STREAM = 0x7F5A00001230  # a handle no call on host arrays may use


def every_call(comm, stream):
    """Every method that takes stream=, on host arrays, each checked."""
    n = 40
    want = reference(all_inputs(n, "float32", "sum"), "float32", "sum")

    def fresh():
        return rank_input(RANK, n, "float32", "sum")

    x = fresh()
    comm.all_reduce(x, stream=stream)
    assert_equal(x, want, "all_reduce")
    out = np.zeros(n, np.float32)
    comm.reduce(fresh(), 0, out=out, stream=stream)
    assert_equal(out, want if RANK == 0 else np.zeros(n, np.float32), "reduce")
    b = fresh() if RANK == 0 else np.zeros(n, np.float32)
    comm.broadcast(b, 0, stream=stream)
    assert_equal(b, rank_input(0, n, "float32", "sum"), "broadcast")
    whole = rank_input(RANK, 4 * SIZE, "float32", "sum")
    mine = comm.reduce_scatter(whole, stream=stream)
    assert_equal(mine, reference(all_inputs(4 * SIZE, "float32", "sum"), "float32", "sum")[4 * RANK:4 * RANK + 4],
                 "reduce_scatter")
    gathered = comm.all_gather(fresh(), stream=stream)
    assert_equal(gathered, np.stack(all_inputs(n, "float32", "sum")), "all_gather")
    arrays = [fresh(), fresh()]
    comm.batch_all_reduce(arrays, stream=stream)
    assert_equal(arrays[1], want, "batch_all_reduce")

    assert_equal(comm.all_reduce_async(fresh(), stream=stream).wait(), want, "all_reduce_async")
    out = np.zeros(n, np.float32)
    comm.reduce_async(fresh(), 0, out=out, stream=stream).wait()
    assert_equal(out, want if RANK == 0 else np.zeros(n, np.float32), "reduce_async")
    b = fresh() if RANK == 0 else np.zeros(n, np.float32)
    comm.broadcast_async(b, 0, stream=stream).wait()
    assert_equal(b, rank_input(0, n, "float32", "sum"), "broadcast_async")
    assert_equal(comm.reduce_scatter_async(whole, stream=stream).wait(), mine, "reduce_scatter_async")
    assert_equal(comm.all_gather_async(fresh(), stream=stream).wait(), gathered, "all_gather_async")
    arrays = [fresh(), fresh()]
    comm.batch_all_reduce_async(arrays, stream=stream).wait()
    assert_equal(arrays[0], want, "batch_all_reduce_async")

    x = fresh()
    persistent = [comm.all_reduce_init(x, out=np.zeros(n, np.float32), stream=stream),
                  comm.reduce_init(x, 0, out=np.zeros(n, np.float32), stream=stream),
                  comm.broadcast_init(fresh() if RANK == 0 else np.zeros(n, np.float32), 0, stream=stream),
                  comm.reduce_scatter_init(whole, stream=stream),
                  comm.all_gather_init(x, stream=stream)]
    for request in persistent:
        request.start()
        request.wait()
    assert_equal(persistent[0].wait(), want, "all_reduce_init")
    assert_equal(persistent[3].wait(), mine, "reduce_scatter_init")
    assert_equal(persistent[4].wait(), gathered, "all_gather_init")

    ops = strata.NcclAllReduce(comm)
    x = fresh()
    ops.reduce("sum", x, stream=stream)
    assert_equal(x, want, "NcclAllReduce.reduce")
    values = [fresh(), fresh()]
    ops.batch_reduce("sum", [(values[0], None), (values[1], None)], stream=stream)
    assert_equal(values[1], want, "NcclAllReduce.batch_reduce")
    b = fresh() if RANK == 0 else np.zeros(n, np.float32)
    ops.broadcast(b, stream=stream)
    assert_equal(b, rank_input(0, n, "float32", "sum"), "NcclAllReduce.broadcast")


# --- stream= on host arrays: taken in every form, ignored ------------------------

@pytest.mark.parametrize("stream", [None, 0, 1, 2, SOME_STREAM, ProtocolStream(SOME_STREAM),
                                    TorchLikeStream(SOME_STREAM), CupyLikeStream(SOME_STREAM), TorchLikeStream(0),
                                    ProtocolStream(0)],
                         ids=["None", "0", "1", "2", "int", "__cuda_stream__", ".cuda_stream", ".ptr",
                              ".cuda_stream-0", "__cuda_stream__-0"])
def test_host_arrays_take_and_ignore_the_stream(comm, stream):
    every_call(comm, stream)


def test_stream_is_keyword_only(comm):
    x = np.ones(4, np.float32)
    with pytest.raises(TypeError):
        comm.all_reduce(x, None, "sum", None, 5)
    with pytest.raises(TypeError):
        strata.NcclAllReduce(comm).reduce("sum", x, None, None, 5)
    still_works(comm)


class NotCallable:
    __cuda_stream__ = (0, 5)


class Garbled:
    def __cuda_stream__(self):
        return "stream 5"


BAD_STREAMS = [
    ("a string", "stream", TypeError, "stream = 'stream'"),
    ("a float", 1.5, TypeError, "stream = 1.5"),
    ("a bool", True, TypeError, "stream = True"),
    ("a list", [1], TypeError, "__cuda_stream__"),
    ("negative", -1, ValueError, "stream = -1 is negative"),
    ("too wide", 1 << 64, ValueError, "does not fit a pointer"),
    ("protocol version 1", ProtocolStream(5, version=1), ValueError, "version 1"),
    ("protocol, negative handle", ProtocolStream(-3), ValueError, r"stream.__cuda_stream__\(\)\[1\] = -3"),
    ("protocol, handle not an int", ProtocolStream("5"), ValueError, r"stream.__cuda_stream__\(\)\[1\] = '5'"),
    ("protocol not a method", NotCallable(), ValueError, "not a method"),
    ("protocol answer not a pair", Garbled(), ValueError, "not a \\(version, handle\\) tuple"),
    (".cuda_stream None", TorchLikeStream(None), ValueError, "stream.cuda_stream = None is not an int"),
    (".ptr negative", CupyLikeStream(-7), ValueError, "stream.ptr = -7 is negative"),
]


@pytest.mark.parametrize("value, error, match", [b[1:] for b in BAD_STREAMS], ids=[b[0] for b in BAD_STREAMS])
def test_bad_streams_are_refused_before_anything_is_sent(comm, value, error, match):
    x = np.ones(8, np.float32)
    calls = [
        lambda: comm.all_reduce(x, stream=value),
        lambda: comm.reduce(x, 0, stream=value),
        lambda: comm.broadcast(x, 0, stream=value),
        lambda: comm.reduce_scatter(np.ones(2 * SIZE, np.float32), stream=value),
        lambda: comm.all_gather(x, stream=value),
        lambda: comm.batch_all_reduce([x], stream=value),
        lambda: comm.all_reduce_async(x, stream=value),
        lambda: comm.batch_all_reduce_async([x], stream=value),
        lambda: comm.all_gather_init(x, stream=value),
        lambda: strata.NcclAllReduce(comm).reduce("sum", x, stream=value),
        lambda: strata.NcclAllReduce(comm).batch_reduce("sum", [(x, None)], stream=value),
        lambda: strata.NcclAllReduce(comm).broadcast(x, stream=value),
    ]
    for i, call in enumerate(calls):
        with pytest.raises(error, match=match) as info:
            call()
        if error is ValueError:
            assert isinstance(info.value, strata.InvalidArgument), f"call {i}: {info.value!r}"
            assert str(info.value).startswith("strata ["), f"call {i}: located: {info.value}"
    still_works(comm)


# --- what the module makes of the stream, seen without a GPU -----------------------

class FakeCudaArray:
    """Claims CUDA memory through __cuda_array_interface__; the pointer is
    host memory, fine as long as nothing dereferences it (no GPU)."""

    def __init__(self, count=16, producer=None):
        self.backing = np.zeros(count, np.float32)
        self.__cuda_array_interface__ = {"shape": (count,), "typestr": "<f4", "data": (self.backing.ctypes.data, False),
                                         "version": 3, "strides": None, "stream": producer}


# stream= -> the handle a DLPack CUDA array is exported for.
EXPORTED_FOR = {"None": (None, 1), "0": (0, 1), "1": (1, 1), "2": (2, 2), "int": (SOME_STREAM, SOME_STREAM),
                "__cuda_stream__": (ProtocolStream(SOME_STREAM), SOME_STREAM),
                ".cuda_stream-0": (TorchLikeStream(0), 1),
                ".cuda_stream": (TorchLikeStream(SOME_STREAM), SOME_STREAM), ".ptr-2": (CupyLikeStream(2), 2)}


@pytest.mark.skipif(not NO_GPU, reason="a GPU is visible: fake device pointers would be dereferenced")
@pytest.mark.parametrize("stream, handle", list(EXPORTED_FOR.values()), ids=list(EXPORTED_FOR))
def test_dlpack_cuda_arrays_are_exported_for_the_calls_stream(comm, stream, handle):
    fakes = []

    def fake():
        fakes.append(FakeDLPack(np.zeros(8, np.float32), KDL_FLOAT, 32, device_type=KDL_CUDA))
        return fakes[-1]

    calls = [
        lambda: comm.all_reduce(fake(), stream=stream),
        lambda: comm.all_reduce_async(fake(), out=fake(), stream=stream).wait(),
        lambda: comm.batch_all_reduce([fake(), fake()], stream=stream),
        lambda: strata.NcclAllReduce(comm).reduce("sum", [fake()], stream=stream),
    ]
    for call in calls:
        with pytest.raises(strata.Unavailable, match="CUDA"):
            call()
    assert [f.requested_streams for f in fakes] == [[handle]] * len(fakes)
    assert all(f.deleted == 1 for f in fakes), "each DLPack deleter runs once"
    still_works(comm)


@pytest.mark.skipif(not NO_GPU, reason="a GPU is visible: fake device pointers would be dereferenced")
@pytest.mark.parametrize("producer", [None, 1, 5])
def test_cuda_arrays_with_a_stream_reach_the_cuda_path(comm, producer):
    with pytest.raises(strata.Unavailable, match="CUDA"):
        comm.all_reduce(FakeCudaArray(producer=producer), stream=SOME_STREAM)
    request = comm.all_reduce_init(FakeCudaArray(producer=producer), stream=ProtocolStream(SOME_STREAM))
    with pytest.raises(strata.Unavailable, match="CUDA"):
        request.start()
        request.wait()  # a run's errors come from wait()
    still_works(comm)


# --- check() ----------------------------------------------------------------------

def test_check_on_a_usable_communicator(comm):
    assert comm.check() is None
    still_works(comm)
    assert comm.check() is None


def test_check_on_a_closed_communicator():
    c = strata.Communicator(WORLD)
    c.close()
    with pytest.raises(ValueError, match="closed"):
        c.check()


@pytest.mark.skipif(SIZE < 2, reason="needs at least 2 ranks")
def test_check_after_a_timeout_broke_the_communicator():
    # The last rank never calls; the others time out, and then check() (and
    # every call) raises PeerFailure on them, every time; the last rank's
    # communicator is still usable.
    c = strata.Communicator(WORLD)
    if RANK != SIZE - 1:
        with pytest.raises(strata.DeadlineExceeded):
            c.all_reduce(np.ones(1000, np.float32), options=strata.CommunicationOptions(timeout_seconds=1.0))
        for _ in range(2):
            with pytest.raises(strata.PeerFailure, match="broken"):
                c.check()
        assert c.broken
    else:
        assert c.check() is None
    WORLD.Barrier()  # mpi4py's own communicator: still fine
    c.close()
