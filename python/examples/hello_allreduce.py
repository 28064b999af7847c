from mpi4py import MPI
import numpy as np
import strata

comm = strata.Communicator(MPI.COMM_WORLD)  # collective; dups the communicator
grad = np.full(1 << 20, comm.rank, dtype=np.float32)
options = strata.CommunicationOptions(timeout_seconds=30)
comm.all_reduce(grad, op="mean", options=options)  # in place
if comm.rank == 0:
    print(f"mean of ranks = {grad[0]:g}")
