"""The TensorFlow-named facades (NcclAllReduce, MultiWorkerAllReduce,
ReductionToOneDevice) on numpy arrays, against numpy references over every
rank's and every replica's input."""
import numpy as np
import pytest

import strata
from helpers import WORLD, all_inputs, assert_equal, assert_same_on_every_rank, rank_input, reference

RANK, SIZE = WORLD.Get_rank(), WORLD.Get_size()


def facades(comm):
    return [
        strata.NcclAllReduce(comm),
        strata.NcclAllReduce(comm, num_packs=2),
        strata.MultiWorkerAllReduce(comm),
        strata.MultiWorkerAllReduce(comm, 1, "xring#2"),
        strata.MultiWorkerAllReduce(comm, all_reduce_spec=[("tree", 1, 4096), ("xring", 2, -1)],
                                    agg_small_grads_max_bytes=8192, agg_small_grads_max_group=4),
        strata.ReductionToOneDevice(comm),
    ]


def test_specs_and_names(comm):
    assert strata.MultiWorkerAllReduce(comm).all_reduce_spec == "pscpu/pscpu#2"  # TensorFlow's default tuple
    assert strata.MultiWorkerAllReduce(comm, all_reduce_spec=("xring", 2, -1)).all_reduce_spec == "xring#2"
    assert strata.MultiWorkerAllReduce(comm, all_reduce_spec="nccl/xring#2:64k:pscpu/pscpu#2").all_reduce_spec == \
        "nccl/xring#2:64k:pscpu/pscpu#2"
    assert strata.NcclAllReduce(comm).all_reduce_spec == "nccl"
    assert strata.ReductionToOneDevice(comm).all_reduce_spec == "tree"
    assert isinstance(strata.NcclAllReduce(comm), strata.CrossDeviceOps)
    assert strata.ReductionToOneDevice(comm).communicator is comm


@pytest.mark.parametrize("index", range(6))
@pytest.mark.parametrize("op", ["sum", "mean", strata.ReduceOp.MAX])
def test_reduce_to_every_rank(comm, index, op):
    name = op.name.lower() if isinstance(op, strata.ReduceOp) else op
    ops = facades(comm)[index]
    for dtype in ["float32", "int64"]:
        x = rank_input(RANK, 5001, dtype, name)
        assert ops.reduce(op, x) is x
        assert_equal(x, reference(all_inputs(5001, dtype, name), dtype, name), f"{ops.all_reduce_spec} {name}")
        assert_same_on_every_rank(x)


@pytest.mark.parametrize("root", range(SIZE))
def test_reduce_to_one_rank(comm, root):
    for ops in facades(comm):
        x = rank_input(RANK, 777, "float64", "sum")
        ops.reduce("sum", [x], destinations=root)
        expected = reference(all_inputs(777, "float64", "sum"), "float64", "sum") if RANK == root else \
            rank_input(RANK, 777, "float64", "sum")
        assert_equal(x, expected, f"{ops.all_reduce_spec} to rank {root}")


@pytest.mark.parametrize("op", ["sum", "mean", "min"])
def test_replicas(comm, op):
    # Two replicas per rank (TensorFlow's num_gpus_per_worker = 2), host
    # memory: the reduction covers ranks x replicas.
    ops = strata.MultiWorkerAllReduce(comm, num_gpus_per_worker=2, all_reduce_spec=("pscpu/pscpu", 2, -1))
    count = 3001
    inputs = [rank_input(r * 2 + k, count, "float32", op) for r in range(SIZE) for k in range(2)]
    value = [inputs[RANK * 2].copy(), inputs[RANK * 2 + 1].copy()]
    assert ops.reduce(op, value) is value
    expected = reference(inputs, "float32", op)
    for k in range(2):
        assert_equal(value[k], expected, f"replica {k} {op}")
    with pytest.raises(ValueError, match="num_gpus_per_worker"):
        ops.reduce(op, [np.zeros(4, np.float32)])


def test_batch_reduce(comm):
    ops = strata.MultiWorkerAllReduce(comm, num_packs=2)
    root = SIZE - 1
    a = rank_input(RANK, 100, "float32", "sum")
    b = rank_input(RANK, 4099, "float32", "sum")
    c = rank_input(RANK, 50, "int32", "sum")
    values = ops.batch_reduce("sum", [(a, None), (b, root), (c, None)])
    assert values[0] is a and values[1] is b and values[2] is c
    assert_equal(a, reference(all_inputs(100, "float32", "sum"), "float32", "sum"), "batch a")
    assert_equal(c, reference(all_inputs(50, "int32", "sum"), "int32", "sum"), "batch c")
    expected_b = reference(all_inputs(4099, "float32", "sum"), "float32", "sum") if RANK == root else \
        rank_input(RANK, 4099, "float32", "sum")
    assert_equal(b, expected_b, "batch b to the last rank")


@pytest.mark.parametrize("source", range(SIZE))
def test_broadcast(comm, source):
    for ops in facades(comm):
        x = rank_input(RANK + 10, 2000, "int32", "sum")
        assert ops.broadcast(x, source_rank=source) is x
        assert_equal(x, rank_input(source + 10, 2000, "int32", "sum"), f"{ops.all_reduce_spec} from {source}")
    # To one destination: the others keep their arrays.
    x = rank_input(RANK + 10, 10, "float32", "sum")
    strata.ReductionToOneDevice(comm).broadcast(x, destinations=0, source_rank=source)
    expected = rank_input(source + 10, 10, "float32", "sum") if RANK == 0 else rank_input(RANK + 10, 10, "float32", "sum")
    assert_equal(x, expected, "broadcast to rank 0")


def test_mpi4py_communicator_directly():
    ops = strata.ReductionToOneDevice(WORLD)
    x = rank_input(RANK, 64, "uint8", "max")
    ops.reduce("max", x)
    assert_equal(x, reference(all_inputs(64, "uint8", "max"), "uint8", "max"), "facade over MPI.COMM_WORLD")
    assert isinstance(ops.communicator, strata.Communicator)
    ops.communicator.close()


def test_facade_errors(comm):
    with pytest.raises(ValueError, match="num_packs"):
        strata.NcclAllReduce(comm, num_packs=-1)
    with pytest.raises(ValueError, match="num_gpus_per_worker"):
        strata.MultiWorkerAllReduce(comm, num_gpus_per_worker=0)
    with pytest.raises(ValueError, match="shards"):
        strata.MultiWorkerAllReduce(comm, all_reduce_spec=("xring", 0, -1))
    with pytest.raises(ValueError):
        strata.MultiWorkerAllReduce(comm, all_reduce_spec="nosuch")
    with pytest.raises(ValueError, match="needs a spec"):
        strata.MultiWorkerAllReduce(comm, all_reduce_spec=None)
    ops = strata.NcclAllReduce(comm)
    with pytest.raises(ValueError, match="destination"):
        ops.reduce("sum", np.zeros(4), destinations=SIZE)
    with pytest.raises(TypeError, match="destinations"):
        ops.reduce("sum", np.zeros(4), destinations="/job:worker")
    with pytest.raises(ValueError, match="replicas must match"):
        ops.reduce("sum", [np.zeros(4), np.zeros(5)])
    with pytest.raises(ValueError, match="not C-contiguous"):
        ops.reduce("sum", np.zeros((4, 4))[:, 1])
    with pytest.raises(TypeError, match="pair"):
        ops.batch_reduce("sum", [np.zeros(4)])
    x = rank_input(RANK, 10, "float32", "sum")
    ops.reduce("sum", x)  # still works
    assert_equal(x, reference(all_inputs(10, "float32", "sum"), "float32", "sum"), "after errors")


def test_timeouts_reach_the_facades(comm):
    # Options pass through: a generous timeout changes nothing.
    x = rank_input(RANK, 10, "float32", "sum")
    strata.NcclAllReduce(comm).reduce("sum", x, options=strata.CommunicationOptions(timeout_seconds=60))
    assert_equal(x, reference(all_inputs(10, "float32", "sum"), "float32", "sum"), "with options")
