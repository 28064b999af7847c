"""strata: all-reduce, reduce, broadcast, batched all-reduce, reduce-scatter
and all-gather for MPI programs written with mpi4py, on numpy arrays (host
memory) and CUDA arrays (__cuda_array_interface__ or DLPack; GPU builds).
See docs/PYTHON.md.

    from mpi4py import MPI
    import numpy as np
    import strata

    comm = strata.Communicator(MPI.COMM_WORLD)
    grad = np.full(1 << 20, comm.rank, dtype=np.float32)
    comm.all_reduce(grad, op="mean")   # in place
"""

# mpi4py first: it initialises MPI (strata needs MPI_Init before any
# Communicator) and loads libmpi with RTLD_GLOBAL, as Open MPI's plugins want.
from mpi4py import MPI as _MPI  # noqa: F401

from .errors import (  # noqa: F401
    BackendError,
    Corrupted,
    DeadlineExceeded,
    Error,
    InvalidArgument,
    Mismatch,
    PeerFailure,
    Unavailable,
)
from ._strata import (  # noqa: F401
    CollectiveHints,
    CommunicationOptions,
    Communicator,
    CrossDeviceOps,
    MultiWorkerAllReduce,
    NcclAllReduce,
    ReduceOp,
    ReductionToOneDevice,
    Request,
    __version__,
    all_reduce_spec_text,
    cuda_built,
)

__all__ = [
    "BackendError", "CollectiveHints", "CommunicationOptions", "Communicator", "Corrupted", "CrossDeviceOps",
    "DeadlineExceeded", "Error", "InvalidArgument", "Mismatch", "MultiWorkerAllReduce", "NcclAllReduce",
    "PeerFailure", "ReduceOp", "ReductionToOneDevice", "Request", "Unavailable", "all_reduce_spec_text",
    "cuda_built",
]
