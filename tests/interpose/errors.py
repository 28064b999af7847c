"""mpi4py programs whose calls fail inside strata, which the interposer must
report the way MPI reports an error: through the communicator's error
handler, with an MPI error code.

    errors.py timeout    rank 1 reaches the second MPI_Allreduce only after
                         rank 0 gave up on it (STRATA_INTERPOSE_TIMEOUT=1
                         bounds every routed call): rank 0 gets
                         DeadlineExceeded = MPI_ERR_OTHER
    errors.py mismatch   the ranks pass different counts (an erroneous
                         program): strata's call check raises Mismatch on
                         every rank = MPI_ERR_TRUNCATE, and the communicator
                         still works afterwards

With mpi4py's default handler (MPI_ERRORS_RETURN, raised as MPI.Exception)
each rank prints "errors: rank R: raised MPI_ERR_..." or "returned". With
MPI4PY_RC_ERRORS=fatal (MPI_ERRORS_ARE_FATAL) MPI aborts the job inside the
call, so the failing rank prints neither.
"""
import sys
import time

from mpi4py import MPI
import numpy as np

from mpi_checks import ProgramChecks

comm = MPI.COMM_WORLD
rank = comm.Get_rank()
# The MPI harness's watchdog (its checks stay unused: check_interpose.py
# judges the lines below), above rank 1's 60 s wait and below the run's 90 s.
watchdog = ProgramChecks("errors", rank, bound_s=80)
scenario = sys.argv[1]
NAMES = {MPI.ERR_OTHER: "MPI_ERR_OTHER", MPI.ERR_TRUNCATE: "MPI_ERR_TRUNCATE"}

GAVE_UP = 23
side = comm.Dup()  # rank 0 tells rank 1 here that it gave up (MPI_Comm_dup is not routed)


def wait_until_rank0_gave_up(bound_s=60):
    """Rank 1 arrives late: only once rank 0's call has raised, or after
    bound_s (rank 0 is then stuck or gone, and the checker reports it)."""
    request = side.irecv(source=0, tag=GAVE_UP)
    give_up = time.monotonic() + bound_s
    while time.monotonic() < give_up:
        done, _ = request.test()
        if done:
            return
        time.sleep(0.01)  # polling interval of a bounded wait for rank 0's message
    sys.stdout.write(f"errors: rank {rank}: no word from rank 0 within {bound_s} s\n")
    sys.stdout.flush()


a = np.ones(1000, dtype=np.float32)
comm.Allreduce(MPI.IN_PLACE, a, op=MPI.SUM)  # creates strata's communicator (unbounded: collective setup)
if scenario == "timeout":
    if rank == 1:
        wait_until_rank0_gave_up()
    b = a
else:
    b = np.ones(10 + rank, dtype=np.float32)
try:
    comm.Allreduce(MPI.IN_PLACE, b, op=MPI.SUM)
    line = f"errors: rank {rank}: returned"
except MPI.Exception as e:
    line = f"errors: rank {rank}: raised {NAMES.get(e.Get_error_class(), e.Get_error_class())}"
sys.stdout.write(line + "\n")  # one write: lines of different ranks must not interleave
sys.stdout.flush()
if scenario == "timeout" and rank == 0:
    side.send("gave up", dest=1, tag=GAVE_UP)
if scenario == "mismatch":
    a = np.full(7, rank + 1, dtype=np.float32)
    comm.Allreduce(MPI.IN_PLACE, a, op=MPI.SUM)
    size = comm.Get_size()
    ok = bool(np.all(a == size * (size + 1) / 2))
    sys.stdout.write(f"errors: rank {rank}: the communicator {'still works' if ok else 'gave wrong results'}\n")
    sys.stdout.flush()
