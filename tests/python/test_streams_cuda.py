"""stream= on CUDA memory: registered on the GPU test double (2 ranks as
virtual nodes, one device each), skipped without a device. The producer
holds the caller's non-blocking stream back 200 ms before it uploads the
input, strata is called at once, and the result is read back through the
same stream, so a call that ignored the stream reads the previous input,
or memory never written. The call's stream in each form orders
all_reduce, all_reduce_async and batch_all_reduce after the caller's work;
handle 0 means the legacy default stream and 2 the per-thread one; an
array whose __cuda_array_interface__ names another producer stream is
ordered after it on the GPU (each start() of a persistent request anew,
and on the host without stream=); DLPack arrays are exported for the
call's stream; a facade, reduce_scatter and all_gather alike; check() is
quiet afterwards. tests/python/cudart.py drives the CUDA runtime."""
import numpy as np
import pytest

import cudart
import strata
from strata import _strata
from helpers import (STREAM_FORMS, WORLD, CupyLikeStream, FakeDLPack, KDL_CUDA, KDL_FLOAT, ProtocolStream,
                     TorchLikeStream, assert_equal, reference)

RANK, SIZE = WORLD.Get_rank(), WORLD.Get_size()

if _strata._cuda_device_count() == 0:
    pytest.skip("no CUDA device (these run on the GPU test double)", allow_module_level=True)


N = 4096


def cuda_input(rank, round_):
    """Distinct per rank and round, so that reading an earlier round's input
    fails; multiples of 0.5, so every f32 sum over the ranks is exact."""
    return ((rank + 1) * (round_ + 1) + 0.5 * (np.arange(N) % 13)).astype(np.float32)


def cuda_sum(round_):
    return reference([cuda_input(r, round_) for r in range(SIZE)], "float32", "sum")


@pytest.fixture(scope="module")
def cuda():
    """tests/python/cudart.py, device 0 current (every rank's, one device each)."""
    cudart.check(cudart.lib().cudaSetDevice(0), "cudaSetDevice")
    return cudart


@pytest.fixture
def device(cuda):
    """A caller's non-blocking stream and three device arrays on it; freed after."""
    stream = cuda.new_stream()
    arrays = [cuda.DeviceArray(N) for _ in range(3)]
    yield stream, arrays
    cuda.synchronize(stream)
    for a in arrays:
        a.free()
    cuda.destroy_stream(stream)


@pytest.mark.parametrize("form", list(STREAM_FORMS), ids=list(STREAM_FORMS))
def test_cuda_calls_order_after_the_callers_stream(comm, cuda, device, form):
    stream, (x, out, _) = device
    given = STREAM_FORMS[form](stream)
    calls = [("all_reduce", lambda: comm.all_reduce(x, out=out, stream=given), out),
             ("all_reduce_async", lambda: comm.all_reduce_async(x, out=out, stream=given).wait(), out),
             ("batch_all_reduce", lambda: comm.batch_all_reduce([x], stream=given), x)]  # in place
    for round_, (name, call, result) in enumerate(calls):
        out.fill(-1, stream)
        x.produce(cuda_input(RANK, round_), stream)
        call()
        assert_equal(result.read(stream), cuda_sum(round_), f"{name}, stream given as {form}")
    assert comm.check() is None


def test_cuda_default_stream_handles(comm, cuda, device):
    # 0 means the legacy default stream, as PyTorch's and CuPy's null
    # streams do; 2 is the calling thread's per-thread default stream.
    _, (x, out, _) = device
    for round_, (produced_on, given) in enumerate([(cuda.LEGACY, 0), (cuda.LEGACY, TorchLikeStream(0)),
                                                   (cuda.PER_THREAD, 2), (cuda.PER_THREAD, ProtocolStream(2))]):
        out.fill(-1, produced_on)
        x.produce(cuda_input(RANK, round_), produced_on)
        comm.all_reduce(x, out=out, stream=given)
        assert_equal(out.read(produced_on), cuda_sum(round_), f"produced on {produced_on}, stream={given!r}")


def test_cuda_array_interface_producer_on_another_stream(comm, cuda, device):
    # x's producer names its own stream; the call runs on the caller's: the
    # module orders the call's stream after the producer's, on the GPU.
    stream, (_, out, _) = device
    producer = cuda.new_stream()
    x = cuda.DeviceArray(N, producer=producer)
    try:
        for round_ in range(2):
            out.fill(-1, stream)
            x.produce(cuda_input(RANK, round_), producer)
            comm.all_reduce(x, out=out, stream=stream)
            assert_equal(out.read(stream), cuda_sum(round_), f"stream-ordered, round {round_}")
        # Persistent: each start() orders after the producer anew.
        request = comm.all_reduce_init(x, out=out, stream=ProtocolStream(stream))
        for round_ in range(2, 4):
            out.fill(-1, stream)
            x.produce(cuda_input(RANK, round_), producer)
            request.start()
            request.wait()
            assert_equal(out.read(stream), cuda_sum(round_), f"persistent, round {round_}")
        # Blocking (no stream=): the module waits for the producer on the host.
        out.fill(-1, stream)
        x.produce(cuda_input(RANK, 4), producer)
        comm.all_reduce(x, out=out)
        assert_equal(out.read(stream), cuda_sum(4), "blocking")
    finally:
        cuda.synchronize(producer)
        x.free()
        cuda.destroy_stream(producer)


def test_cuda_dlpack_arrays_are_exported_for_the_calls_stream(comm, cuda, device):
    stream, (x, out, _) = device
    dl_x = FakeDLPack(np.empty(N, np.float32), KDL_FLOAT, 32, device_type=KDL_CUDA, address=x.pointer)
    dl_out = FakeDLPack(np.empty(N, np.float32), KDL_FLOAT, 32, device_type=KDL_CUDA, address=out.pointer)
    out.fill(-1, stream)
    x.produce(cuda_input(RANK, 0), stream)
    comm.all_reduce(dl_x, out=dl_out, stream=CupyLikeStream(stream))
    assert_equal(out.read(stream), cuda_sum(0), "DLPack")
    assert dl_x.requested_streams == [stream] and dl_out.requested_streams == [stream]


def test_cuda_facade_and_blockwise_calls_on_a_stream(comm, cuda, device):
    stream, (x, out, whole) = device
    ops = strata.NcclAllReduce(comm)
    x.produce(cuda_input(RANK, 0), stream)
    ops.reduce("sum", x, stream=stream)
    assert_equal(x.read(stream), cuda_sum(0), "NcclAllReduce.reduce")
    if N % SIZE == 0:
        block = N // SIZE
        part = cuda.DeviceArray(block)
        try:
            whole.produce(cuda_input(RANK, 1), stream)
            comm.reduce_scatter(whole, out=part, stream=stream)
            assert_equal(part.read(stream), cuda_sum(1)[RANK * block:(RANK + 1) * block], "reduce_scatter")
            part.produce(cuda_input(RANK, 2)[:block], stream)
            comm.all_gather(part, out=out, stream=stream)
            assert_equal(out.read(stream), np.concatenate([cuda_input(r, 2)[:block] for r in range(SIZE)]),
                         "all_gather")
        finally:
            cuda.synchronize(stream)
            part.free()
    assert comm.check() is None
