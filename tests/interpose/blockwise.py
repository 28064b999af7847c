"""An ordinary mpi4py program: Reduce_scatter_block and Allgather on numpy
arrays, and the calls around them that strata does not serve. Run under
mpirun, with or without libstrata_mpi.so preloaded; every result is checked
against numpy, computed from every rank's input (each rank can regenerate
all inputs). Every rank's input differs from block to block and from rank
to rank, so a result taken from the wrong block or the wrong rank fails.

    blockwise.py

Ends with "blockwise: rank R: N checks passed" (exit 0) or one line per
failure (exit 1).
"""
import functools
import sys

from mpi4py import MPI
import numpy as np

import mpi_checks
from mpi_checks import OPS, next_tag

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
checks = mpi_checks.ProgramChecks("blockwise", rank)
check = checks.check


def data(r, n, dtype, op, tag):
    """Rank r's input. Values keep every result exact whatever the order of
    the reduction: small integers (halves for floats) for sums, factors of
    magnitude 1 or 2 for products. 8-bit sums stay in range (Open MPI
    saturates where strata wraps around, docs/INTERPOSER.md), and so do
    8-bit products up to 6 ranks."""
    rng = np.random.default_rng(1000 * r + tag)
    if op == "prod":
        return rng.choice(np.array([-2, -1, 1, 2]), n).astype(dtype)
    bound = 50 if np.dtype(dtype).itemsize > 1 else 120 // size
    x = rng.integers(-bound, bound + 1, n)
    if np.dtype(dtype).kind == "u":
        x = np.abs(x)
    return (x * 0.5).astype(dtype) if np.dtype(dtype).kind in "fc" else x.astype(dtype)


def scattered(members, me, n, dtype, op, tag, fn=None):
    """Block `me` of the reduction over `members` of their size x n inputs."""
    blocks = [data(r, len(members) * n, dtype, op, tag)[me * n:(me + 1) * n] for r in members]
    return functools.reduce(fn or OPS[op][1], blocks)


def gathered(members, n, dtype, tag):
    return np.concatenate([data(r, n, dtype, "sum", tag) for r in members])


def name(dtype):
    return np.dtype(dtype).name


# --- MPI_Reduce_scatter_block: dtypes x ops x block sizes --------------------
for dtype in (np.float32, np.float64, np.int32, np.int64, np.uint8, np.int8, np.uint32, np.uint64):
    for op in OPS:
        for n in (1, 7, 1000, 65539):
            if n > 7 and dtype not in (np.float32, np.int64):
                continue  # the large blocks for two of the types: their algorithms do not depend on the type
            t = next_tag()
            send = data(rank, size * n, dtype, op, t)
            recv = np.full(n, 99, dtype=dtype)
            comm.Reduce_scatter_block(send, recv, op=OPS[op][0])
            check(f"Reduce_scatter_block {name(dtype)} {op} n={n}", recv, scattered(range(size), rank, n, dtype, op, t))
            check(f"Reduce_scatter_block {name(dtype)} {op} n={n} left sendbuf alone", send,
                  data(rank, size * n, dtype, op, t))

# MPI_IN_PLACE: recvbuf holds every block of the input, the result is its
# first block. What follows it MPI leaves undefined; Open MPI keeps it as it
# was, and so must the interposer (mpi4py's own tests check that).
for dtype, op in ((np.float32, "sum"), (np.float64, "max"), (np.int32, "min"), (np.int64, "prod"), (np.uint8, "sum")):
    for n in (1, 333, 65539):
        t = next_tag()
        buf = data(rank, size * n, dtype, op, t)
        comm.Reduce_scatter_block(MPI.IN_PLACE, buf, op=OPS[op][0])
        check(f"Reduce_scatter_block IN_PLACE {name(dtype)} {op} n={n}", buf[:n],
              scattered(range(size), rank, n, dtype, op, t))
        check(f"Reduce_scatter_block IN_PLACE {name(dtype)} {op} n={n}: the rest of recvbuf as it was", buf[n:],
              data(rank, size * n, dtype, op, t)[n:])

# Every predefined datatype the interposer maps, named explicitly.
EXPLICIT = (("INT8_T", np.int8), ("UINT8_T", np.uint8), ("INT32_T", np.int32), ("UINT32_T", np.uint32),
            ("INT64_T", np.int64), ("UINT64_T", np.uint64), ("LONG_LONG", np.int64), ("UNSIGNED_LONG_LONG", np.uint64),
            ("SIGNED_CHAR", np.int8), ("UNSIGNED_CHAR", np.uint8), ("INT", np.int32), ("UNSIGNED", np.uint32),
            ("LONG", np.int64), ("UNSIGNED_LONG", np.uint64), ("FLOAT", np.float32), ("DOUBLE", np.float64))
for mpi_name, dtype in EXPLICIT:
    t = next_tag()
    recv = np.empty(50, dtype=dtype)
    comm.Reduce_scatter_block([data(rank, size * 50, dtype, "min", t), getattr(MPI, mpi_name)],
                              [recv, getattr(MPI, mpi_name)], op=MPI.MIN)
    check(f"Reduce_scatter_block MPI_{mpi_name} min", recv, scattered(range(size), rank, 50, dtype, "min", t))

# --- MPI_Allgather: dtypes x block sizes, in place -------------------------
# Allgather moves bytes, so every datatype is served: MPI_SHORT and complex
# too, which the reductions leave to MPI.
for dtype in (np.float32, np.float64, np.int32, np.int64, np.uint8, np.int16, np.complex128):
    for n in (1, 7, 1000, 65539):
        t = next_tag()
        send = data(rank, n, dtype, "sum", t)
        recv = np.full(size * n, 99, dtype=dtype)
        comm.Allgather(send, recv)
        check(f"Allgather {name(dtype)} n={n}", recv, gathered(range(size), n, dtype, t))
        check(f"Allgather {name(dtype)} n={n} left sendbuf alone", send, data(rank, n, dtype, "sum", t))
    for n in (1, 333, 65539):
        t = next_tag()
        buf = np.full(size * n, 99, dtype=dtype)  # MPI_IN_PLACE: this rank's block is already in place
        buf[rank * n:(rank + 1) * n] = data(rank, n, dtype, "sum", t)
        comm.Allgather(MPI.IN_PLACE, buf)
        check(f"Allgather IN_PLACE {name(dtype)} n={n}", buf, gathered(range(size), n, dtype, t))

# MPI matches the send and receive sides by type signature only: the same
# bytes under other datatypes, differing between the sides and from rank to
# rank, plain bytes or packed, and holes in a strided receive type left
# untouched.
n = 500
contiguous = MPI.INT.Create_contiguous(n).Commit()
strided = MPI.INT.Create_vector(n, 1, 2).Commit()  # n ints, every second slot
strided_block = strided.Create_resized(0, 2 * n * 4).Commit()  # blocks follow one another
t = next_tag()
want = gathered(range(size), n, np.int32, t)
send = data(rank, n, np.int32, "sum", t)
recv = np.full(size * n, -1, dtype=np.int32)
comm.Allgather([send, n, MPI.INT], [recv.view(np.uint8), 4 * n, MPI.BYTE])
check("Allgather MPI_INT to MPI_BYTE", recv, want)
recv = np.full(size * n, -1, dtype=np.int32)
if rank % 2 == 0:
    comm.Allgather([send, 1, contiguous], [recv, n, MPI.INT])
else:
    comm.Allgather([send, n, MPI.INT], [recv, 1, contiguous])
check("Allgather contiguous type on one side, MPI_INT on the other, by rank", recv, want)
wide = np.full(2 * size * n, -1, dtype=np.int32)
comm.Allgather([send, n, MPI.INT], [wide, 1, strided_block])
check("Allgather into a strided type: the values", wide[0::2], want)
check("Allgather into a strided type: the holes", wide[1::2], np.full(size * n, -1, dtype=np.int32))
wide = np.full(2 * size * n, -1, dtype=np.int32)
wide[2 * rank * n:2 * (rank + 1) * n:2] = send
comm.Allgather(MPI.IN_PLACE, [wide, 1, strided_block])
check("Allgather IN_PLACE in a strided type: the values", wide[0::2], want)
check("Allgather IN_PLACE in a strided type: the holes", wide[1::2], np.full(size * n, -1, dtype=np.int32))
for datatype in (contiguous, strided, strided_block):
    datatype.Free()

# --- Split communicators: other sizes, one rank included ---------------------
sub = comm.Split(color=0 if rank > 0 else 1, key=rank)  # every rank but 0, and rank 0 alone
members = list(range(1, size)) if rank > 0 else [0]
me = sub.Get_rank()
t = next_tag()
recv = np.empty(3000, dtype=np.float64)
sub.Reduce_scatter_block(data(rank, sub.Get_size() * 3000, np.float64, "sum", t), recv, op=MPI.SUM)
want_blocks = [data(r, len(members) * 3000, np.float64, "sum", t)[me * 3000:(me + 1) * 3000] for r in members]
check("split Reduce_scatter_block float64 sum", recv, functools.reduce(np.add, want_blocks))
t = next_tag()
recv = np.empty(len(members) * 3000, dtype=np.int32)
sub.Allgather(data(rank, 3000, np.int32, "sum", t), recv)
check("split Allgather int32", recv, gathered(members, 3000, np.int32, t))
sub.Free()

# --- What strata does not serve: must fall through to MPI, same results ------
t = next_tag()
x = data(rank, size * 20, np.int32, "sum", t) % 2
y = np.empty(20, dtype=np.int32)
comm.Reduce_scatter_block(x, y, op=MPI.LAND)
want = functools.reduce(np.logical_and, [data(r, size * 20, np.int32, "sum", t)[rank * 20:(rank + 1) * 20] % 2
                                         for r in range(size)]).astype(np.int32)
check("Reduce_scatter_block MPI_LAND", y, want)
t = next_tag()
recv = np.empty(40, dtype=np.int16)
comm.Reduce_scatter_block(data(rank, size * 40, np.int16, "sum", t), recv, op=MPI.SUM)
check("Reduce_scatter_block int16 (MPI_SHORT) sum", recv, scattered(range(size), rank, 40, np.int16, "sum", t))


def absmax(inbuf, inoutbuf, datatype):
    a = np.frombuffer(inbuf, dtype=np.int32)
    b = np.frombuffer(inoutbuf, dtype=np.int32)
    b[:] = np.maximum(np.abs(a), np.abs(b))


user_op = MPI.Op.Create(absmax, commute=True)
t = next_tag()
recv = np.empty(64, dtype=np.int32)
comm.Reduce_scatter_block(data(rank, size * 64, np.int32, "sum", t), recv, op=user_op)
check("Reduce_scatter_block with a user-defined op", recv,
      scattered(range(size), rank, 64, np.int32, "sum", t, fn=lambda a, b: np.maximum(np.abs(a), np.abs(b))))
user_op.Free()

empty = np.empty(0, dtype=np.float32)
comm.Reduce_scatter_block(np.empty(0, dtype=np.float32), empty, op=MPI.SUM)
check("Reduce_scatter_block of 0 elements", empty, np.empty(0, dtype=np.float32))
comm.Allgather(np.empty(0, dtype=np.float64), np.empty(0, dtype=np.float64))
check("Allgather of 0 elements", np.empty(0), np.empty(0))

# MPI_Reduce_scatter (blocks of any size) is not intercepted: MPI runs it,
# with equal blocks and with blocks of different sizes.
for counts in ([6] * size, [r + 1 for r in range(size)]):
    t = next_tag()
    send = data(rank, sum(counts), np.float64, "sum", t)
    recv = np.empty(counts[rank], dtype=np.float64)
    comm.Reduce_scatter(send, recv, recvcounts=counts, op=MPI.SUM)
    start = sum(counts[:rank])
    check(f"Reduce_scatter counts {counts}", recv,
          functools.reduce(np.add, [data(r, sum(counts), np.float64, "sum", t)[start:start + counts[rank]]
                                    for r in range(size)]))

# An intercommunicator between the even and the odd ranks: Allgather gathers
# the other group's blocks, Reduce_scatter_block (with groups of one size,
# where MPI's block counts are plain) reduces the other group's inputs.
if size >= 2:
    local = comm.Split(color=rank % 2, key=rank)
    inter = local.Create_intercomm(0, comm, 1 - rank % 2)
    others = [r for r in range(size) if r % 2 != rank % 2]
    t = next_tag()
    recv = np.empty(len(others) * 30, dtype=np.float64)
    inter.Allgather(data(rank, 30, np.float64, "sum", t), recv)
    check("intercommunicator Allgather", recv, gathered(others, 30, np.float64, t))
    if size % 2 == 0:
        t = next_tag()
        recv = np.empty(10, dtype=np.int64)
        inter.Reduce_scatter_block(data(rank, len(others) * 10, np.int64, "sum", t), recv, op=MPI.SUM)
        mine = local.Get_rank()
        check("intercommunicator Reduce_scatter_block", recv,
              functools.reduce(np.add, [data(r, len(others) * 10, np.int64, "sum", t)[mine * 10:(mine + 1) * 10]
                                        for r in others]))
    inter.Free()
    local.Free()

sys.exit(checks.finish())
