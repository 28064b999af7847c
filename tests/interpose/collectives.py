"""An ordinary mpi4py program: Allreduce, Reduce and Bcast on numpy arrays,
the way code nobody here wrote uses them. Run under mpirun, with or without
libstrata_mpi.so preloaded; every result is checked against numpy, computed
from every rank's input (each rank can regenerate all inputs).

    collectives.py [--strata-semantics]

--strata-semantics also checks what the interposer documents where MPI
leaves the result open (docs/INTERPOSER.md): float MIN/MAX keep NaN, 8-bit
integer sums wrap around. Ends with "collectives: rank R: N checks passed"
(exit 0) or one line per failure (exit 1).
"""
import functools
import sys

from mpi4py import MPI
import numpy as np

import mpi_checks
from mpi_checks import OPS, next_tag

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
strata_semantics = "--strata-semantics" in sys.argv[1:]
checks = mpi_checks.ProgramChecks("collectives", rank)
check = checks.check


def data(r, n, dtype, op, tag):
    """Rank r's input. Values keep every result exact whatever the order of
    the reduction: small integers (halves for floats) for sums, factors of
    magnitude 1 or 2 for products."""
    rng = np.random.default_rng(1000 * r + tag)
    if op == "prod":
        return rng.choice(np.array([-2, -1, 1, 2]), n).astype(dtype)
    x = rng.integers(-50, 51, n)
    if np.dtype(dtype).kind == "u":
        x = np.abs(x)
    return (x * 0.5).astype(dtype) if np.dtype(dtype).kind == "f" else x.astype(dtype)


def reference(ranks, n, dtype, op, tag):
    return functools.reduce(OPS[op][1], [data(r, n, dtype, op, tag) for r in ranks])


# --- MPI_Allreduce on MPI_COMM_WORLD: four dtypes x four ops x sizes ----------
for dtype in (np.float32, np.float64, np.int32, np.int64):
    for op in OPS:
        for n in (1, 7, 1000, 65539):
            t = next_tag()
            send = data(rank, n, dtype, op, t)
            recv = np.full(n, 99, dtype=dtype)
            comm.Allreduce(send, recv, op=OPS[op][0])
            want = reference(range(size), n, dtype, op, t)
            check(f"Allreduce {np.dtype(dtype).name} {op} n={n}", recv, want)
            check(f"Allreduce {np.dtype(dtype).name} {op} n={n} left sendbuf alone", send, data(rank, n, dtype, op, t))
        t = next_tag()
        buf = data(rank, 1000, dtype, op, t)
        comm.Allreduce(MPI.IN_PLACE, buf, op=OPS[op][0])
        check(f"Allreduce IN_PLACE {np.dtype(dtype).name} {op}", buf, reference(range(size), 1000, dtype, op, t))

# A larger one (1 MiB of f32), and the other integer widths strata serves.
t = next_tag()
recv = np.empty(262144, dtype=np.float32)
comm.Allreduce(data(rank, 262144, np.float32, "sum", t), recv, op=MPI.SUM)
check("Allreduce float32 sum 1 MiB", recv, reference(range(size), 262144, np.float32, "sum", t))
for dtype, op in ((np.int8, "max"), (np.uint8, "min"), (np.uint32, "sum"), (np.uint64, "max"), (np.int8, "prod")):
    t = next_tag()
    recv = np.empty(333, dtype=dtype)
    comm.Allreduce(data(rank, 333, dtype, op, t), recv, op=OPS[op][0])
    check(f"Allreduce {np.dtype(dtype).name} {op}", recv, reference(range(size), 333, dtype, op, t))

# Every predefined datatype the interposer maps, named explicitly (numpy
# arrays alone only reach MPI_FLOAT, MPI_DOUBLE, MPI_INT, MPI_LONG, ...).
EXPLICIT = (("INT8_T", np.int8), ("UINT8_T", np.uint8), ("INT32_T", np.int32), ("UINT32_T", np.uint32),
            ("INT64_T", np.int64), ("UINT64_T", np.uint64), ("LONG_LONG", np.int64), ("UNSIGNED_LONG_LONG", np.uint64),
            ("SIGNED_CHAR", np.int8), ("UNSIGNED_CHAR", np.uint8), ("INT", np.int32), ("UNSIGNED", np.uint32),
            ("LONG", np.int64), ("UNSIGNED_LONG", np.uint64), ("FLOAT", np.float32), ("DOUBLE", np.float64))
# MPI_CHAR is no reduction type in the standard; Open MPI reduces it as a
# signed 8-bit integer (OSU's benchmarks do so by default), and so does the
# interposer there: the max of negative and positive values tells signed
# from unsigned.
if "Open MPI" in MPI.Get_library_version():
    EXPLICIT += (("CHAR", np.int8),)
for name, dtype in EXPLICIT:
    t = next_tag()
    recv = np.empty(100, dtype=dtype)
    comm.Allreduce([data(rank, 100, dtype, "max", t), getattr(MPI, name)], [recv, getattr(MPI, name)], op=MPI.MAX)
    check(f"Allreduce MPI_{name} max", recv, reference(range(size), 100, dtype, "max", t))

# --- MPI_Reduce: to the last rank and to rank 0, in place at the root ---------
for root in sorted({size - 1, 0}):
    for dtype, op in ((np.float32, "sum"), (np.float64, "max"), (np.int32, "min"), (np.int64, "prod")):
        t = next_tag()
        send = data(rank, 5000, dtype, op, t)
        recv = np.full(5000, 99, dtype=dtype) if rank == root else None
        comm.Reduce(send, recv, op=OPS[op][0], root=root)
        if rank == root:
            check(f"Reduce {np.dtype(dtype).name} {op} root={root}", recv, reference(range(size), 5000, dtype, op, t))
        t = next_tag()
        buf = data(rank, 777, dtype, op, t)
        if rank == root:
            comm.Reduce(MPI.IN_PLACE, buf, op=OPS[op][0], root=root)
            check(f"Reduce IN_PLACE {np.dtype(dtype).name} {op} root={root}", buf, reference(range(size), 777, dtype, op, t))
        else:
            comm.Reduce(buf, None, op=OPS[op][0], root=root)
            check(f"Reduce {np.dtype(dtype).name} {op} root={root} left sendbuf alone", buf, data(rank, 777, dtype, op, t))

# --- MPI_Bcast: predefined types, and the same bytes under other datatypes ----
root = size - 1
for dtype in (np.float64, np.int32, np.float32, np.uint8):
    t = next_tag()
    want = data(root, 4097, dtype, "sum", t)
    buf = want.copy() if rank == root else np.zeros(4097, dtype=dtype)
    comm.Bcast(buf, root=root)
    check(f"Bcast {np.dtype(dtype).name}", buf, want)
# MPI matches broadcasts by type signature: the root sends 1 x contiguous(n
# ints), the others receive n x MPI_INT, or unpack them into every second
# slot of a larger array (a vector type): every rank must still agree to use
# strata or not, and the holes must stay untouched.
n = 1000
contiguous = MPI.INT.Create_contiguous(n).Commit()
strided = MPI.INT.Create_vector(n, 1, 2).Commit()
want = np.arange(n, dtype=np.int32) * 3 - 7
if rank == root:
    buf = want.copy()
    comm.Bcast([buf, 1, contiguous], root=root)
    comm.Bcast([buf, 1, contiguous], root=root)
else:
    buf = np.zeros(n, dtype=np.int32)
    comm.Bcast([buf, n, MPI.INT], root=root)
    check("Bcast contiguous type at the root, MPI_INT elsewhere", buf, want)
    wide = np.full(2 * n, -1, dtype=np.int32)
    comm.Bcast([wide, 1, strided], root=root)
    check("Bcast into a vector type: the values", wide[0::2], want)
    check("Bcast into a vector type: the holes", wide[1::2], np.full(n, -1, dtype=np.int32))
contiguous.Free()
strided.Free()

# --- Split and Dup: every communicator gets its own strata communicator ------
sub = comm.Split(color=rank % 2, key=-rank)
sub.Set_name("split-by-parity")
members = [r for r in range(size) if r % 2 == rank % 2]
t = next_tag()
recv = np.empty(3000, dtype=np.float32)
sub.Allreduce(data(rank, 3000, np.float32, "sum", t), recv, op=MPI.SUM)
check("split Allreduce float32 sum", recv, reference(members, 3000, np.float32, "sum", t))
t = next_tag()
recv = np.empty(3000, dtype=np.float64) if sub.Get_rank() == 0 else None
sub.Reduce(data(rank, 3000, np.float64, "max", t), recv, op=MPI.MAX, root=0)
if sub.Get_rank() == 0:
    check("split Reduce float64 max", recv, reference(members, 3000, np.float64, "max", t))
buf = np.arange(100, dtype=np.float64) if sub.Get_rank() == 0 else np.zeros(100)
sub.Bcast(buf, root=0)
check("split Bcast", buf, np.arange(100, dtype=np.float64))
sub.Free()
for i in range(3):  # created, used and freed repeatedly
    dup = comm.Dup()
    t = next_tag()
    recv = np.empty(2000, dtype=np.int64)
    dup.Allreduce(data(rank, 2000, np.int64, "sum", t), recv, op=MPI.SUM)
    check(f"dup #{i} Allreduce int64 sum", recv, reference(range(size), 2000, np.int64, "sum", t))
    dup.Free()
t = next_tag()
buf = data(rank, 10, np.float32, "sum", t)
comm.Allreduce(MPI.IN_PLACE, buf, op=MPI.SUM)
check("world Allreduce after the dups were freed", buf, reference(range(size), 10, np.float32, "sum", t))

# --- What strata does not serve: must fall through to MPI, same results ------
x = np.array([rank % 2, 1, 0], dtype=np.int32)
y = np.empty_like(x)
comm.Allreduce(x, y, op=MPI.LAND)
check("Allreduce MPI_LAND", y, np.array([int(all(r % 2 for r in range(size))), 1, 0], dtype=np.int32))
pairs = np.array([(rank * 7) % size, rank], dtype=np.int32)
out = np.empty_like(pairs)
comm.Allreduce([pairs, MPI.TWOINT], [out, MPI.TWOINT], op=MPI.MAXLOC)
best = max(range(size), key=lambda r: ((r * 7) % size, -r))
check("Allreduce MPI_MAXLOC on MPI_2INT", out, np.array([(best * 7) % size, best], dtype=np.int32))
t = next_tag()
recv = np.empty(50, dtype=np.int16)
comm.Allreduce(data(rank, 50, np.int16, "sum", t), recv, op=MPI.SUM)
check("Allreduce int16 (MPI_SHORT) sum", recv, reference(range(size), 50, np.int16, "sum", t))


def absmax(inbuf, inoutbuf, datatype):
    a = np.frombuffer(inbuf, dtype=np.int32)
    b = np.frombuffer(inoutbuf, dtype=np.int32)
    b[:] = np.maximum(np.abs(a), np.abs(b))


# An intercommunicator between the even and the odd ranks: each group gets
# the sum over the other group (MPI's intercommunicator Allreduce).
local = comm.Split(color=rank % 2, key=rank)
inter = local.Create_intercomm(0, comm, 1 - rank % 2)
t = next_tag()
recv = np.empty(40, dtype=np.float64)
inter.Allreduce(data(rank, 40, np.float64, "sum", t), recv, op=MPI.SUM)
check("intercommunicator Allreduce", recv, reference([r for r in range(size) if r % 2 != rank % 2], 40, np.float64, "sum", t))
inter.Free()
local.Free()

user_op = MPI.Op.Create(absmax, commute=True)
t = next_tag()
recv = np.empty(64, dtype=np.int32)
comm.Allreduce(data(rank, 64, np.int32, "sum", t), recv, op=user_op)
check("Allreduce with a user-defined op", recv,
      functools.reduce(np.maximum, [np.abs(data(r, 64, np.int32, "sum", t)) for r in range(size)]))
user_op.Free()
empty = np.empty(0, dtype=np.float32)
comm.Allreduce(MPI.IN_PLACE, empty, op=MPI.SUM)
check("Allreduce of 0 elements", empty, np.empty(0, dtype=np.float32))

# --- Where MPI leaves the result open, the documented strata behaviour ------
if strata_semantics:
    x = np.array([np.nan if rank == 0 else 1.0, 2.0 + rank], dtype=np.float32)
    y = np.empty_like(x)
    comm.Allreduce(x, y, op=MPI.MAX)
    check("Allreduce float32 max keeps NaN", y, np.array([np.nan, 1.0 + size], dtype=np.float32))
    x = np.full(4, 100, dtype=np.int8)
    y = np.empty_like(x)
    comm.Allreduce(x, y, op=MPI.SUM)
    check("Allreduce int8 sum wraps around", y, np.full(4, (100 * size + 128) % 256 - 128, dtype=np.int8))

sys.exit(checks.finish())
