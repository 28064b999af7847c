"""An mpi4py program whose second MPI_Allreduce times out on rank 0: rank 1
arrives 3 s late while STRATA_INTERPOSE_TIMEOUT=1 bounds every routed call.
The interposer must report strata's DeadlineExceeded the way MPI reports an
error: through the communicator's error handler, as MPI_ERR_OTHER.

With mpi4py's default handler (MPI_ERRORS_RETURN, raised as MPI.Exception)
rank 0 prints "errors: rank 0: raised MPI_ERR_OTHER" and both ranks finish.
With MPI4PY_RC_ERRORS=fatal (MPI_ERRORS_ARE_FATAL) MPI aborts the job inside
the call, so rank 0 never prints "returned".
"""
import sys
import time

from mpi4py import MPI
import numpy as np

comm = MPI.COMM_WORLD
rank = comm.Get_rank()
a = np.ones(1000, dtype=np.float32)
comm.Allreduce(MPI.IN_PLACE, a, op=MPI.SUM)  # creates strata's communicator (unbounded: collective setup)
if rank == 1:
    time.sleep(3)
try:
    comm.Allreduce(MPI.IN_PLACE, a, op=MPI.SUM)
    sys.stdout.write(f"errors: rank {rank}: returned\n")  # one write: lines of ranks must not interleave
except MPI.Exception as e:
    name = "MPI_ERR_OTHER" if e.Get_error_class() == MPI.ERR_OTHER else f"error class {e.Get_error_class()}"
    sys.stdout.write(f"errors: rank {rank}: raised {name}\n")
sys.stdout.flush()
