"""Errors: every bad argument raises ValueError (strata.InvalidArgument)
before anything is sent, on every rank alike; C++ errors arrive as the
documented Python classes; CUDA arrays are routed to strata's CUDA path,
which raises strata.Unavailable on a machine without a GPU."""
import math
import os

import numpy as np
import pytest
from mpi4py import MPI

import strata
from strata import _strata
from helpers import WORLD, FakeDLPack, KDL_CUDA, KDL_FLOAT, KDL_INT, assert_equal, still_works

RANK, SIZE = WORLD.Get_rank(), WORLD.Get_size()
NO_GPU = _strata._cuda_device_count() == 0


# --- the classes ------------------------------------------------------------

@pytest.mark.skipif(bool(os.environ.get("STRATA_FLIGHT_DIR")), reason="STRATA_FLIGHT_DIR is set")
def test_dump_flight_record_without_its_folder(comm):
    # No STRATA_FLIGHT_DIR: nothing to write to, and the error says to set it.
    with pytest.raises(strata.InvalidArgument, match="STRATA_FLIGHT_DIR"):
        comm.dump_flight_record()


def test_hierarchy():
    assert issubclass(strata.Error, RuntimeError)
    assert issubclass(strata.InvalidArgument, ValueError) and issubclass(strata.InvalidArgument, strata.Error)
    assert issubclass(strata.DeadlineExceeded, TimeoutError) and issubclass(strata.DeadlineExceeded, strata.Error)
    for cls in [strata.Mismatch, strata.PeerFailure, strata.Unavailable, strata.BackendError]:
        assert issubclass(cls, strata.Error) and issubclass(cls, RuntimeError)
        assert not issubclass(cls, ValueError)


@pytest.mark.parametrize("kind", ["Error", "InvalidArgument", "DeadlineExceeded", "Mismatch", "PeerFailure",
                                  "Unavailable", "BackendError", "Corrupted"])
def test_cpp_exceptions_are_translated(kind):
    with pytest.raises(getattr(strata, kind)) as info:
        _strata._throw_for_test(kind, f"a {kind} message")
    assert type(info.value) is getattr(strata, kind)
    assert str(info.value) == f"a {kind} message"
    if kind == "DeadlineExceeded":
        assert info.value.waiting_for == [1, 3]
        assert info.value.in_earlier_call == [2]
    if kind == "BackendError":
        assert (info.value.backend, info.value.code, info.value.host, info.value.rank) == ("MPI", 15, "node7", 2)


# --- arrays -------------------------------------------------------------------

def test_non_contiguous_arrays_are_value_errors(comm):
    strided = np.zeros((8, 8), np.float32)[:, ::2]
    fortran = np.asfortranarray(np.zeros((4, 3), np.float64))
    with pytest.raises(ValueError, match="x is not C-contiguous"):
        comm.all_reduce(strided)
    with pytest.raises(strata.InvalidArgument, match="out is not C-contiguous"):
        comm.all_reduce(np.zeros(12), out=fortran.reshape(4, 3))
    with pytest.raises(ValueError, match=r"arrays\[1\] is not C-contiguous"):
        comm.batch_all_reduce([np.zeros(4, np.float32), strided])
    with pytest.raises(ValueError, match="x is not C-contiguous"):
        comm.broadcast(strided, 0)
    still_works(comm)


def test_read_only_targets_are_value_errors(comm):
    x = np.zeros(4, np.float32)
    x.setflags(write=False)
    with pytest.raises(ValueError, match="x is read-only"):
        comm.all_reduce(x)
    with pytest.raises(ValueError, match="out is read-only"):
        comm.all_reduce(np.zeros(4, np.float32), out=x)
    with pytest.raises(ValueError, match="read-only"):
        comm.all_reduce(b"\0" * 8)  # bytes export read-only buffers
    still_works(comm)


@pytest.mark.parametrize("array, name", [
    (np.zeros(4, np.int16), "int16"),
    (np.zeros(4, np.uint16), "uint16"),
    (np.zeros(4, np.bool_), "bool"),
    (np.zeros(4, np.complex64), "complex"),
    (np.zeros(4, np.dtype(">f4")), "big-endian"),
    (np.zeros(4, np.dtype([("a", np.int32), ("b", np.float32)])), "format"),
])
def test_unsupported_dtypes_are_value_errors(comm, array, name):
    with pytest.raises(ValueError, match=name):
        comm.all_reduce(array)


def test_objects_that_are_no_arrays_are_type_errors(comm):
    with pytest.raises(TypeError, match="x is a list, not an array"):
        comm.all_reduce([1.0, 2.0])
    with pytest.raises(TypeError, match="pass a list"):
        comm.batch_all_reduce(np.zeros(4))


def test_mismatched_out_and_overlaps_are_value_errors(comm):
    with pytest.raises(ValueError, match="count"):
        comm.all_reduce(np.zeros(4, np.float32), out=np.zeros(5, np.float32))
    with pytest.raises(ValueError, match="dtype"):
        comm.all_reduce(np.zeros(4, np.float32), out=np.zeros(4, np.float64))
    base = np.zeros(10, np.float32)
    with pytest.raises(ValueError, match="overlap"):
        comm.all_reduce(base[:6], out=base[2:8])
    with pytest.raises(ValueError):
        comm.batch_all_reduce([base[:6], base[4:]])
    still_works(comm)


# --- other arguments ----------------------------------------------------------

def test_ranks_that_disagree_raise_mismatch_everywhere(comm):
    """The last rank passes one element more: every rank raises
    strata.Mismatch naming the count, and the communicator still works."""
    if SIZE < 2:
        return
    x = np.ones(101 if RANK == SIZE - 1 else 100, dtype=np.float32)
    with pytest.raises(strata.Mismatch, match="count"):
        comm.all_reduce(x)
    still_works(comm)


def test_blockwise_ranks_that_disagree_raise_mismatch_everywhere(comm):
    """The last rank's block is one element longer (its own x and out agree):
    every rank raises strata.Mismatch naming the count."""
    if SIZE < 2:
        return
    block = 5 if RANK == SIZE - 1 else 4
    with pytest.raises(strata.Mismatch, match="count"):
        comm.reduce_scatter(np.ones(SIZE * block, np.float32))
    with pytest.raises(strata.Mismatch, match="count"):
        comm.all_gather(np.ones(block, np.float32))
    still_works(comm)


def test_bad_ops(comm):
    with pytest.raises(ValueError, match="op"):
        comm.all_reduce(np.zeros(4), op="average")
    with pytest.raises(TypeError, match="op"):
        comm.all_reduce(np.zeros(4), op=3)


def test_bad_roots(comm):
    for root in [-1, SIZE]:
        with pytest.raises(ValueError, match="root"):
            comm.reduce(np.zeros(4), root)
        with pytest.raises(ValueError, match="root"):
            comm.broadcast(np.zeros(4), root)
    still_works(comm)


def test_bad_options(comm):
    with pytest.raises(ValueError, match="bytes_per_pack"):
        comm.batch_all_reduce([np.zeros(4)], options=strata.CommunicationOptions(bytes_per_pack=-1))
    with pytest.raises(ValueError, match="timeout_seconds"):
        comm.all_reduce(np.zeros(4), options=strata.CommunicationOptions(timeout_seconds=math.nan))
    with pytest.raises(ValueError, match="timeout_seconds"):
        comm.all_reduce(np.zeros(4), options=strata.CommunicationOptions(timeout_seconds=-1))
    with pytest.raises(ValueError, match="nccl"):
        comm.all_reduce(np.zeros(4), options=strata.CommunicationOptions(implementation="nccl"))
    with pytest.raises(ValueError, match="implementation"):
        strata.CommunicationOptions(implementation="fast")
    with pytest.raises(TypeError, match="options"):
        comm.all_reduce(np.zeros(4), options={"timeout_seconds": 1})
    with pytest.raises(ValueError, match="num_packs"):
        comm.batch_all_reduce([np.zeros(4)], num_packs=-1)
    with pytest.raises(ValueError, match="nbytes"):
        comm.algorithm_for(-1)
    with pytest.raises(ValueError, match="collective"):
        comm.algorithm_for(8, collective="gather")
    with pytest.raises(ValueError, match="memory"):
        comm.algorithm_for(8, memory="disk")
    with pytest.raises(ValueError, match="num_packs"):
        comm.plan_for([np.zeros(4)], num_packs=-1)
    still_works(comm)


def test_options_objects():
    o = strata.CommunicationOptions(bytes_per_pack=4096, timeout_seconds=None, implementation="RING")
    assert (o.bytes_per_pack, o.timeout_seconds, o.implementation) == (4096, 0.0, "ring")
    o.implementation = "auto"
    assert o.implementation == "auto"
    assert strata.CollectiveHints is strata.CommunicationOptions
    assert "bytes_per_pack=4096" in repr(o)


@pytest.mark.parametrize("spec, text", [
    ("pscpu/pscpu#2", "pscpu/pscpu#2"),
    (("pscpu/pscpu", 2, -1), "pscpu/pscpu#2"),
    (("xring", 1, -1), "xring"),
    (["xring", 1, -1], "xring"),
    ([("nccl/xring", 2, 65536), ("pscpu/pscpu", 2, -1)], "nccl/xring#2:64k:pscpu/pscpu#2"),
    ([("tree", 1, 4096), ("rechd", 1, 1 << 24), ("xring", 2, -1)], "tree:4k:rechd:16M:xring#2"),
    ([("tree", 1, 1000), ("xring", 1, -1)], "tree:1000:xring"),
    ("tree:4096:xring", "tree:4k:xring"),  # strings come back as strata prints them
    (None, ""),
])
def test_spec_tuples_convert(spec, text):
    assert strata.all_reduce_spec_text(spec) == text


@pytest.mark.parametrize("spec, message", [
    ((), "empty"),
    ([], "empty"),
    (("xring", 2), "not a tuple"),
    (("xring", 0, -1), "shards"),
    (("xring", 2.0, -1), "shards"),
    (("xring", True, -1), "shards"),
    (("xring", 1, 4096), "last limit must be -1"),
    ([("tree", 1, -1), ("xring", 1, -1)], "limit -1 of entry 1 must be >= 0"),
    ([("tree", 1, 8192), ("xring", 1, 4096), ("rechd", 1, -1)], "increase strictly"),
    ([("nosuch", 1, -1)], "unknown algorithm"),
    ([("tree", 1, "4k"), ("xring", 1, -1)], "limit must be an int"),
    ((3, 1, -1), "not a tuple"),
    ([("", 1, -1)], "no algorithm name"),
    ([("tree:4k:xring", 1, -1)], "unknown algorithm"),
    ([(b"xring", 1, -1)], "alg must be a string"),
    ([("tree", 1, 4096), "xring"], "not a tuple"),
])
def test_bad_spec_tuples_are_value_errors(spec, message):
    with pytest.raises(ValueError, match=message):
        strata.all_reduce_spec_text(spec)
    with pytest.raises(ValueError, match=message):
        strata.Communicator(WORLD, all_reduce_spec=spec)


def test_bad_specs_raise_from_the_constructor_on_every_rank():
    for spec in ["warp", "xring#0", "tree:4k:xring:8k", [("tree", 1, 8192), ("xring", 1, 4096), ("rechd", 1, -1)],
                 [("nosuch", 1, -1)]]:
        with pytest.raises(ValueError):
            strata.Communicator(WORLD, all_reduce_spec=spec)
    with pytest.raises(TypeError, match="all_reduce_spec"):
        strata.Communicator(WORLD, all_reduce_spec=42)
    with pytest.raises(ValueError, match="chunk_bytes"):
        strata.Communicator(WORLD, chunk_bytes=-1)


def test_verify_checksum_runs_and_bad_values_are_value_errors():
    with strata.Communicator(WORLD, verify="checksum") as c:
        x = np.arange(1000, dtype=np.float32) + WORLD.rank
        c.all_reduce(x)
        want = (np.arange(1000, dtype=np.float64) * WORLD.size + sum(range(WORLD.size))).astype(np.float32)
        assert_equal(x, want, "all_reduce with verify=checksum")
    with pytest.raises(strata.InvalidArgument, match="verify = 'sums' must be 'checksum' or 'off'"):
        strata.Communicator(WORLD, verify="sums")


def test_reproducible_modes_run_and_bad_values_are_value_errors():
    # Rank r holds the values rotated by r. order: the fold in rank order in
    # float32; exact: the float64 sum (exact here) rounded once to float32.
    values = np.array([3.0 * 2.0 ** -20, 1.0, -7.0 * 2.0 ** 10, 5.0], dtype=np.float32)
    fold = np.roll(values, 0).copy()
    for r in range(1, WORLD.size):
        fold = (fold + np.roll(values, r)).astype(np.float32)
    exact = sum(np.roll(values, r).astype(np.float64) for r in range(WORLD.size)).astype(np.float32)
    for mode, want in (("order", fold), ("exact", exact)):
        with strata.Communicator(WORLD, reproducible=mode, accumulate_f32=True) as c:
            x = np.tile(np.roll(values, WORLD.rank), 250)
            c.all_reduce(x)
            assert_equal(x, np.tile(want, 250), f"all_reduce with reproducible={mode}")
    with pytest.raises(strata.InvalidArgument, match="config.reproducible = 'bitwise' must be off, order or exact"):
        strata.Communicator(WORLD, reproducible="bitwise")
    with pytest.raises(strata.InvalidArgument, match="reproducible must be None"):
        strata.Communicator(WORLD, reproducible=3)


def test_bad_communicators():
    with pytest.raises(TypeError, match="mpi4py"):
        strata.Communicator("world")
    with pytest.raises(ValueError, match="COMM_NULL"):
        strata.Communicator(MPI.COMM_NULL)


def test_closed_communicator_refuses_calls():
    c = strata.Communicator(WORLD)
    c.close()
    c.close()  # idempotent
    assert c.closed and "closed" in repr(c)
    with pytest.raises(ValueError, match="closed"):
        c.all_reduce(np.zeros(4))
    with pytest.raises(ValueError, match="closed"):
        strata.NcclAllReduce(c)


def test_sub_communicators():
    # A split communicator (odd and even ranks) works like any other.
    sub = WORLD.Split(RANK % 2, RANK)
    with strata.Communicator(sub) as c:
        x = np.array([RANK], np.int64)
        c.all_reduce(x)
        assert x[0] == sum(r for r in range(SIZE) if r % 2 == RANK % 2)
    sub.Free()


# --- CUDA arrays ----------------------------------------------------------------

class FakeCudaArray:
    """Claims CUDA memory through __cuda_array_interface__ (version 3); the
    pointer is host memory, which is fine as long as nothing dereferences it."""

    def __init__(self, count=16, typestr="<f4", readonly=False, strides=None, mask=None, stream=None):
        self.backing = np.zeros(count, np.float32)
        self.__cuda_array_interface__ = {
            "shape": (count,), "typestr": typestr, "data": (self.backing.ctypes.data, readonly),
            "version": 3, "strides": strides, "stream": stream}
        if mask is not None:
            self.__cuda_array_interface__["mask"] = mask


def test_cuda_array_interface_is_validated_before_anything_is_sent(comm):
    with pytest.raises(ValueError, match="not C-contiguous"):
        comm.all_reduce(FakeCudaArray(count=8, strides=(8,)))
    with pytest.raises(ValueError, match="masked"):
        comm.all_reduce(FakeCudaArray(mask=FakeCudaArray()))
    with pytest.raises(ValueError, match="read-only"):
        comm.all_reduce(FakeCudaArray(readonly=True))
    with pytest.raises(ValueError, match="int16"):
        comm.all_reduce(FakeCudaArray(typestr="<i2"))
    with pytest.raises(ValueError, match="big-endian"):
        comm.all_reduce(FakeCudaArray(typestr=">f4"))
    with pytest.raises(ValueError, match="stream"):
        comm.all_reduce(FakeCudaArray(stream=0))
    still_works(comm)


@pytest.mark.skipif(not NO_GPU, reason="a GPU is visible: fake device pointers would be dereferenced")
def test_cuda_arrays_reach_the_cuda_path_and_raise_unavailable_without_a_gpu(comm):
    calls = [
        lambda: comm.all_reduce(FakeCudaArray()),
        lambda: comm.all_reduce(FakeCudaArray(), out=FakeCudaArray()),
        lambda: comm.reduce(FakeCudaArray(), 0),
        lambda: comm.broadcast(FakeCudaArray(), 0),
        lambda: comm.batch_all_reduce([FakeCudaArray(), FakeCudaArray(count=4)]),
        lambda: comm.reduce_scatter(FakeCudaArray(count=4 * SIZE), out=FakeCudaArray(count=4)),
        lambda: comm.all_gather(FakeCudaArray(count=4), out=FakeCudaArray(count=4 * SIZE)),
        lambda: strata.NcclAllReduce(comm).reduce("sum", FakeCudaArray()),
    ]
    for i, call in enumerate(calls):
        with pytest.raises(strata.Unavailable, match="CUDA") as info:
            call()
        assert isinstance(info.value, RuntimeError), f"call {i}"
    # Host calls on the same communicator are unaffected.
    still_works(comm)


def test_blockwise_cuda_arrays_need_an_out(comm):
    """The module allocates results of reduce_scatter and all_gather only in
    host memory: a CUDA x without out= is refused before anything is sent."""
    with pytest.raises(ValueError, match="x is a CUDA array and out is None"):
        comm.reduce_scatter(FakeCudaArray(count=4 * SIZE))
    with pytest.raises(ValueError, match="x is a CUDA array and out is None"):
        comm.all_gather(FakeCudaArray(count=4))
    still_works(comm)


def test_mixing_host_and_cuda_arrays_is_a_value_error(comm):
    with pytest.raises(ValueError, match="memory"):
        comm.all_reduce(np.zeros(16, np.float32), out=FakeCudaArray())


@pytest.mark.skipif(not NO_GPU, reason="a GPU is visible: fake device pointers would be dereferenced")
def test_dlpack_cuda_tensors_reach_the_cuda_path(comm):
    fake = FakeDLPack(np.zeros(8, np.float32), KDL_FLOAT, 32, device_type=KDL_CUDA)
    with pytest.raises(strata.Unavailable, match="CUDA"):
        comm.all_reduce(fake)
    assert fake.requested_streams == [1], "CUDA producers are asked to order their work before stream 1"
    assert fake.deleted == 1, "the DLPack deleter runs once, also when the call fails"
    still_works(comm)


def test_dlpack_validation(comm):
    backing = np.zeros(12, np.float32)
    strided = FakeDLPack(backing, KDL_FLOAT, 32, shape=(3, 2), strides=(4, 2))
    with pytest.raises(ValueError, match="not C-contiguous"):
        comm.all_reduce(strided)
    assert strided.deleted == 1
    with pytest.raises(ValueError, match="int16"):
        comm.all_reduce(FakeDLPack(np.zeros(4, np.int16), KDL_INT, 16))
    with pytest.raises(ValueError, match="device type 7"):
        comm.all_reduce(FakeDLPack(np.zeros(4, np.float32), KDL_FLOAT, 32, device_type=7))
    explicit = FakeDLPack(np.arange(6, dtype=np.float32).reshape(2, 3), KDL_FLOAT, 32, strides=(3, 1))
    comm.all_reduce(explicit)  # C-contiguous strides given explicitly are fine
    assert_equal(explicit.backing, np.arange(6, dtype=np.float32).reshape(2, 3) * SIZE, "explicit strides")
